/**
 * Validation of a whole tree: every file against its schema in the closed contract document (ajv, JSON Schema
 * 2020-12), then the spec's invariants across files. Returns problems, each naming the file and the field.
 */
import { isDeepStrictEqual } from 'node:util';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { historyPage } from '../contract/history-page.js';
import { basisAt, dateAt, LedgerRows, type PlannedLedger, type Rows } from '../contract/ledger-rows.js';
import type { AssetRisk, Catalog, Universe } from '../contract/shapes.js';
import { staleModels } from '../contract/stale.js';
import { FREE_TIER_SIZE, PLANS, PRECOMPUTED_PAGES } from '../contract/plans.js';
import { internalSchemas } from '../openapi/schemas.js';
import { loadValidators, saveValidators, validatorKey } from './validator-cache.js';
import { SCHEMA_OF, TREE } from '../contract/tree.js';

type Doc = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * ajv's options for the contract. No optimisation pass over the generated code: it halves the compile (about
 * 140 -> 85 ms per build, measured over every schema of the tree) and the validators run a few milliseconds per
 * build either way. No meta-schema check of the contract as it is added (35 of about 100 ms): its schemas are the
 * code's, not the input's, and test/generator/output/validate.test.ts checks them against JSON Schema 2020-12.
 */
const AJV_OPTIONS = { strict: false, allErrors: false, validateFormats: true, validateSchema: false, code: { optimize: false } } as const;
/** The schemas a tree's files are validated against (contract/tree.ts). */
const TREE_SCHEMAS = [...new Set(SCHEMA_OF.map(([, name]) => name))];
const refOf = (name: string) => (name.startsWith('x-internal-') ? name : `openapi.json#/components/schemas/${name}`);

/**
 * The validator of each schema of `openapi` (and of the tree's internal files), compiled on first use. `cache`:
 * the tree's validators come from the standalone code a previous build of the same contract left (validator-cache.ts),
 * or are compiled together and left for the next build.
 */
export function compileSchemas(openapi: object, { cache = false } = {}): (name: string) => ValidateFunction {
  let ajv: InstanceType<typeof Ajv2020.default> | undefined;
  const internal = internalSchemas();
  const ajvOf = (source = false) => {
    if (!ajv) {
      // Built on first use: a rebuild whose files are all unchanged compiles nothing.
      ajv = new Ajv2020.default({ ...AJV_OPTIONS, code: { ...AJV_OPTIONS.code, source } });
      addFormats.default(ajv);
      ajv.addSchema(openapi, 'openapi.json');
      for (const [n, schema] of Object.entries(internal)) ajv.addSchema(schema, `x-internal-${n}`);
    }
    return ajv;
  };
  const validators = new Map<string, ValidateFunction>();
  let cacheRead = !cache;
  const readCache = () => {
    cacheRead = true;
    const refs = Object.fromEntries(TREE_SCHEMAS.map((n) => [n, refOf(n)]));
    const key = validatorKey({ openapi, internal }, refs, AJV_OPTIONS);
    const loaded = loadValidators(key, TREE_SCHEMAS);
    if (loaded) return loaded.forEach((v, n) => validators.set(n, v));
    const fresh = ajvOf(true);
    for (const n of TREE_SCHEMAS) validators.set(n, fresh.getSchema(refs[n]!)!);
    saveValidators(fresh, key, refs);
  };
  return (name) => {
    if (!cacheRead && TREE_SCHEMAS.includes(name)) readCache();
    let v = validators.get(name);
    if (!v) {
      v = ajvOf().getSchema(refOf(name))!;
      if (!v) throw new Error(`no schema ${name} in openapi.json`);
      validators.set(name, v);
    }
    return v;
  };
}

/** Files whose rows are HistoryRows: the bulk of a tree, and mostly the same rows in several files and builds. */
const ROW_FILES = new Set(['HistoryResponse', 'x-internal-HistoryLedger']);

/**
 * What the validator may take as already checked. `carriedVouched`: rows carried as the previous tree's ledgers
 * spelled them (LedgerRows) passed this same contract when they were published (the build sets it when the
 * previous manifest's contract hash is this one's), so only the rows added to them are checked.
 */
export interface Vouched {
  carriedVouched?: boolean;
}

/**
 * A tree's validation, a file at a time as the build makes them, then across files once all are made. A history
 * row is checked once per build however many files hold it (the ledger and its pages share row objects).
 */
export class TreeValidator {
  private readonly schema: (name: string) => ValidateFunction;
  private readonly checkedRows = new WeakSet<object>();
  private readonly carriedVouched: boolean;

  constructor(contract: object, { carriedVouched = false }: Vouched = {}) {
    this.schema = compileSchemas(contract, { cache: true });
    this.carriedVouched = carriedVouched;
  }

  /** The rows of a file this validator must check, each with its index in the file; those checked already left out. */
  private unchecked(rows: Rows): [unknown, number][] {
    const out: [unknown, number][] = [];
    const add = (r: unknown, i: number) => {
      if (!(r && typeof r === 'object' && this.checkedRows.has(r))) out.push([r, i]);
    };
    if (rows instanceof LedgerRows) {
      if (!(this.carriedVouched && rows.carried.asWritten)) for (let i = 0; i < rows.head; i++) add(rows.carried.row(i), i);
      rows.added.forEach((r, k) => add(r, rows.head + k));
    } else rows.forEach(add);
    return out;
  }

  /**
   * The file's problems against its schema. `unchanged`: byte-identical to a previous tree validated against the
   * same openapi.json, so only its place in the tree is checked (its schema passed when it was written).
   */
  file(path: string, doc: unknown, unchanged = false): string[] {
    const entry = SCHEMA_OF.find(([re]) => re.test(path));
    if (!entry) return [`${path}: not a file the tree should hold`];
    if (unchanged) return [];
    const validate = this.schema(entry[1]);
    const rows = ROW_FILES.has(entry[1]) ? (doc as Doc | undefined)?.data?.rows : undefined;
    const sharing = rows instanceof LedgerRows || Array.isArray(rows);
    const unchecked = sharing ? this.unchecked(rows as Rows) : [];
    const whole = !sharing || (!(rows instanceof LedgerRows) && unchecked.length === rows.length);
    const subject = whole ? doc : { ...(doc as Doc), data: { ...(doc as Doc).data, rows: unchecked.map(([r]) => r) } };
    if (validate(subject)) {
      for (const [r] of unchecked) if (r && typeof r === 'object') this.checkedRows.add(r);
      return [];
    }
    const e = validate.errors![0]!;
    // An error in the rows checked is named at the row's index in the file itself.
    const where = whole
      ? e.instancePath
      : e.instancePath.replace(/^\/data\/rows\/(\d+)/, (_, k: string) => `/data/rows/${unchecked[Number(k)]![1]}`);
    return [
      `${path}: ${where || '/'}: ${e.message}${e.params && 'allowedValues' in e.params ? ` (${(e.params.allowedValues as unknown[]).join(', ')})` : ''}`,
    ];
  }

  /** The rules across files, on the whole tree. */
  tree(files: Map<string, unknown>): string[] {
    if (!files.get(TREE.openapi)) return [`${TREE.openapi}: absent`];
    return invariants(files, this.carriedVouched);
  }
}

/**
 * A whole tree at once (`risk-readings check`, tests): every file against its schema, then the cross-file rules.
 * `unchanged` names files byte-identical to a previous tree validated against the same contract (TreeValidator).
 */
export async function validateTree(
  files: Map<string, unknown>,
  contract: object,
  unchanged: ReadonlySet<string> = new Set(),
  vouched: Vouched = {},
): Promise<string[]> {
  if (!files.get(TREE.openapi)) return [`${TREE.openapi}: absent`];
  const validator = new TreeValidator(contract, vouched);
  const problems: string[] = [];
  for (const [path, doc] of files) problems.push(...validator.file(path, doc, unchanged.has(path)));
  return problems.length ? problems : validator.tree(files);
}

/**
 * Cross-file rules of the spec and decisions that no single schema can state. Carried rows under `carriedVouched`
 * met the history rules when they were published; the rows added to them are checked, from the last carried one on.
 */
function invariants(files: Map<string, unknown>, carriedVouched: boolean): string[] {
  const p: string[] = [];
  const catalog = files.get(TREE.catalog) as Doc | undefined;
  if (!catalog) return [`${TREE.catalog}: absent`];
  const symbols = Object.keys(catalog.assets);
  const risks = new Map<string, AssetRisk>();
  for (const s of symbols) {
    const doc = files.get(TREE.risk(s)) as Doc | undefined;
    if (!doc) p.push(`${TREE.risk(s)}: absent for a catalogue asset`);
    else risks.set(s, doc.data as AssetRisk);
  }

  // Universes: every member has a risk file, summaries count the catalogue's members.
  for (const [u, members] of Object.entries((catalog as Catalog).universes)) {
    const summary = files.get(TREE.summary(u)) as Doc | undefined;
    if (!summary) p.push(`${TREE.summary(u)}: absent`);
    else if (summary.data.asset_count !== members.length)
      p.push(`${TREE.summary(u)}: data.asset_count is ${summary.data.asset_count}, the catalogue has ${members.length}`);
    for (const s of members) if (!risks.get(s)?.universes.includes(u as Universe)) p.push(`${TREE.risk(s)}: data.universes lacks ${u}`);
  }

  // Free tier: ten crypto assets (fewer only when fewer are ranked), the same everywhere.
  const free: string[] = catalog.free_tier;
  const rankedCrypto = [...risks.values()].filter((r) => r.asset_class === 'CRYPTO' && r.market_cap_rank !== null).length;
  if (free.length !== Math.min(FREE_TIER_SIZE, rankedCrypto))
    p.push(`${TREE.catalog}: free_tier has ${free.length} assets, expected ${Math.min(FREE_TIER_SIZE, rankedCrypto)}`);
  for (const [s, r] of risks) {
    if (r.free_tier !== free.includes(s))
      p.push(`${TREE.risk(s)}: data.free_tier is ${r.free_tier}, the catalogue says ${free.includes(s)}`);
    if (r.free_tier && r.asset_class !== 'CRYPTO') p.push(`${TREE.risk(s)}: data.free_tier on a non-crypto asset`);
    const stale = staleModels(r);
    if (!isDeepStrictEqual(stale, r.stale_models))
      p.push(`${TREE.risk(s)}: data.stale_models is ${JSON.stringify(r.stale_models)}, the readings say ${JSON.stringify(stale)}`);
    const signal = files.has(TREE.dcaSignal(s));
    if (signal !== (r.dca !== null) || signal !== catalog.assets[s].dca_signal)
      p.push(`${TREE.dcaSignal(s)}: ${signal ? 'present' : 'absent'} but dca is ${r.dca === null ? 'null' : 'a reading'}`);
  }
  for (const plan of PLANS) {
    const list = files.get(TREE.assetList(plan)) as Doc | undefined;
    if (!list) {
      p.push(`${TREE.assetList(plan)}: absent`);
      continue;
    }
    const listed: string[] = list.data.assets.map((a: Doc) => a.symbol);
    const expected = plan === 'basic' ? symbols.filter((s) => free.includes(s)) : symbols;
    if (!isDeepStrictEqual(listed, expected))
      p.push(`${TREE.assetList(plan)}: data.assets lists ${listed.length} assets, expected ${expected.length}`);
    if (list.data.total_asset_count !== symbols.length)
      p.push(`${TREE.assetList(plan)}: data.total_asset_count is ${list.data.total_asset_count}, expected ${symbols.length}`);
    if (list.data.asset_count !== listed.length) p.push(`${TREE.assetList(plan)}: data.asset_count does not count data.assets`);
  }

  // History: strictly ascending dates, archive rows before the first published day, page files cut from the ledger.
  for (const s of symbols) {
    const full = files.get(TREE.historyFull(s)) as PlannedLedger | undefined;
    if (!full) {
      p.push(`${TREE.historyFull(s)}: absent`);
      continue;
    }
    const rows = full.data.rows;
    const from = rows instanceof LedgerRows && carriedVouched && rows.carried.asWritten ? rows.head : 0;
    for (let i = Math.max(from, 1); i < rows.length; i++)
      if (!(dateAt(rows, i - 1) < dateAt(rows, i)))
        p.push(`${TREE.historyFull(s)}: data.rows[${i}].date ${dateAt(rows, i)} is not after ${dateAt(rows, i - 1)}`);
    const first = full.data.first_published;
    for (let i = from; i < rows.length; i++)
      if (basisAt(rows, i) === 'weekly_archive' && first !== null && dateAt(rows, i) >= first)
        p.push(`${TREE.historyFull(s)}: data.rows[${i}] is weekly_archive on or after the first published day ${first}`);
    if (full.data.total_row_count !== rows.length) p.push(`${TREE.historyFull(s)}: data.total_row_count is not the row count`);
    for (const page of PRECOMPUTED_PAGES) {
      if (!isDeepStrictEqual(files.get(TREE.historyPage(s, page.limit)), historyPage(full, page)))
        p.push(`${TREE.historyPage(s, page.limit)}: differs from the page cut from the ledger`);
    }
  }
  return p;
}
