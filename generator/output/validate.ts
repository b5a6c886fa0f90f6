/**
 * Validation of a whole tree: every file against its schema in the closed contract document (ajv, JSON Schema
 * 2020-12), then the spec's invariants across files. Returns problems, each naming the file and the field.
 */
import { isDeepStrictEqual } from 'node:util';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { historyPage, type Ledger } from '../contract/history-page.js';
import type { AssetRisk, Catalog, Universe } from '../contract/shapes.js';
import { feedProblems } from '../contract/changes-page.js';
import { staleModels } from '../contract/stale.js';
import { FREE_TIER_SIZE, PLANS, PRECOMPUTED_PAGES } from '../contract/plans.js';
import { internalSchemas } from '../openapi/schemas.js';
import { SCHEMA_OF, TREE } from '../contract/tree.js';

type Doc = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * ajv's options for the contract. The contract is not checked against the meta-schema as it is added: its schemas
 * are the code's, not the input's, and test/generator/output/validate.test.ts checks them against JSON Schema 2020-12.
 * Nor is the generated code optimised: a build compiles each schema once and runs it over a few files, so the
 * optimiser costs more than it saves (bench/README.md).
 */
const AJV_OPTIONS = { strict: false, allErrors: false, validateFormats: true, validateSchema: false, code: { optimize: false } } as const;

/** The validator of each schema of `openapi` (and of the tree's internal files), compiled on first use. */
export function compileSchemas(openapi: object): (name: string) => ValidateFunction {
  let ajv: InstanceType<typeof Ajv2020.default> | undefined;
  const validators = new Map<string, ValidateFunction>();
  return (name) => {
    if (!ajv) {
      // Built on first use: a rebuild whose files are all unchanged compiles nothing.
      ajv = new Ajv2020.default(AJV_OPTIONS);
      addFormats.default(ajv);
      ajv.addSchema(openapi, 'openapi.json');
      for (const [n, schema] of Object.entries(internalSchemas())) ajv.addSchema(schema, `x-internal-${n}`);
    }
    let v = validators.get(name);
    if (!v) {
      v = ajv.getSchema(name.startsWith('x-internal-') ? name : `openapi.json#/components/schemas/${name}`);
      if (!v) throw new Error(`no schema ${name} in openapi.json`);
      validators.set(name, v);
    }
    return v;
  };
}

/** The problem of one file against its schema, naming the file and the field; none when it conforms. */
export function fileProblems(schema: (name: string) => ValidateFunction, path: string, doc: unknown): string[] {
  const entry = SCHEMA_OF.find(([re]) => re.test(path));
  if (!entry) return [`${path}: not a file the tree should hold`];
  const validate = schema(entry[1]);
  if (validate(doc)) return [];
  const e = validate.errors![0]!;
  const allowed = e.params && 'allowedValues' in e.params ? ` (${(e.params.allowedValues as unknown[]).join(', ')})` : '';
  // A key that breaks its pattern (a catalogue symbol that is a path, decision 101) is named; so is a value off its bounds.
  const key = e.propertyName !== undefined ? ` (key ${JSON.stringify(e.propertyName)})` : '';
  const found = e.params && 'limit' in e.params ? ` (found ${JSON.stringify(valueAt(doc, e.instancePath))})` : '';
  return [`${path}: ${e.instancePath || '/'}: ${e.message}${allowed}${key}${found}`];
}

/** The value at a JSON pointer of `doc`. */
function valueAt(doc: unknown, pointer: string): unknown {
  return pointer
    .split('/')
    .slice(1)
    .map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], doc);
}

/**
 * A whole tree (the build before it publishes, `risk-readings check`, tests): every file against its schema in
 * `contract`, then the rules across files.
 */
export function validateTree(files: ReadonlyMap<string, unknown>, contract: object): string[] {
  if (!files.get(TREE.openapi)) return [`${TREE.openapi}: absent`];
  const schema = compileSchemas(contract);
  const problems = [...files].flatMap(([path, doc]) => fileProblems(schema, path, doc));
  return problems.length ? problems : treeProblems(files);
}

/** Cross-file rules of the spec and decisions that no single schema can state. */
export function treeProblems(files: ReadonlyMap<string, unknown>): string[] {
  if (!files.get(TREE.openapi)) return [`${TREE.openapi}: absent`];
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
    const full = files.get(TREE.historyFull(s)) as Ledger | undefined;
    if (!full) {
      p.push(`${TREE.historyFull(s)}: absent`);
      continue;
    }
    const rows = full.data.rows;
    for (let i = 1; i < rows.length; i++)
      if (!(rows[i - 1]!.date < rows[i]!.date))
        p.push(`${TREE.historyFull(s)}: data.rows[${i}].date ${rows[i]!.date} is not after ${rows[i - 1]!.date}`);
    const first = full.data.first_published;
    for (let i = 0; i < rows.length; i++)
      if (rows[i]!.basis === 'weekly_archive' && first !== null && rows[i]!.date >= first)
        p.push(`${TREE.historyFull(s)}: data.rows[${i}] is weekly_archive on or after the first published day ${first}`);
    if (full.data.total_row_count !== rows.length) p.push(`${TREE.historyFull(s)}: data.total_row_count is not the row count`);
    for (const page of PRECOMPUTED_PAGES) {
      if (!isDeepStrictEqual(files.get(TREE.historyPage(s, page.limit)), historyPage(full, page)))
        p.push(`${TREE.historyPage(s, page.limit)}: differs from the page cut from the ledger`);
    }
  }
  const feed = files.get(TREE.changes);
  if (!feed) p.push(`${TREE.changes}: absent`);
  else p.push(...feedProblems(feed).map((why) => `${TREE.changes}: ${why}`));
  return p;
}
