/**
 * What changed between two built trees, in the API's terms. Manifests are compared first; only files whose
 * hashes differ are opened. Pure over a file loader, so it is tested without a disk.
 */
import { addRisk, changeEvents, emptyState, type ChangeEvent } from '../api/changes.js';
import { TREE } from '../contract/tree.js';
import type { HistoryRow } from '../contract/history-page.js';
import type { Manifest } from '../output/manifest.js';

export type Group = 'contract' | 'catalogue' | 'readings' | 'summaries' | 'history';
export const GROUPS: Group[] = ['contract', 'history', 'catalogue', 'readings', 'summaries'];

export interface Change {
  group: Group;
  /** The asset symbol, universe or file the change is about. */
  subject: string;
  field: string;
  old: unknown;
  new: unknown;
  /** new - old, for numbers. */
  delta?: number;
  /** `alarm`: a published history row changed or vanished; `contract`: the API's meaning changed. */
  level: 'info' | 'alarm' | 'contract';
}

export interface Loader {
  manifest(): Promise<Manifest>;
  /** A file the tree's manifest lists. */
  json<T = unknown>(path: string): Promise<T>;
}

type Doc = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * The AssetRisk fields readings fill: those whose value is an object in either tree (a reading, or null without one),
 * so a field a new reading adds is compared without a list to extend here.
 */
const readingFields = (x: Doc, y: Doc): string[] =>
  [...new Set([...Object.keys(x), ...Object.keys(y)])].filter((k) =>
    [x[k], y[k]].some((v) => v && typeof v === 'object' && !Array.isArray(v)),
  );
/** Where a reading came from and when: reported once as `as_of`, not as field changes. */
const PROVENANCE = new Set(['as_of', 'as_of_basis', 'source_page', 'model', 'currency']);

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

function scalar(group: Group, subject: string, field: string, a: unknown, b: unknown, level: Change['level'] = 'info'): Change[] {
  if (same(a, b)) return [];
  const c: Change = { group, subject, field, old: a ?? null, new: b ?? null, level };
  if (typeof a === 'number' && typeof b === 'number') c.delta = Math.round((b - a) * 1e8) / 1e8;
  return [c];
}

/** Field by field over two objects of plain values (one level of nesting is walked). */
function fields(
  group: Group,
  subject: string,
  prefix: string,
  a: Doc | null | undefined,
  b: Doc | null | undefined,
  skip = PROVENANCE,
): Change[] {
  if (!a || !b) return [];
  const out: Change[] = [];
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
    if (skip.has(k)) continue;
    const [x, y] = [a[k], b[k]];
    if (x && y && typeof x === 'object' && typeof y === 'object' && !Array.isArray(x) && !Array.isArray(y))
      out.push(...fields(group, subject, `${prefix}${k}.`, x, y, skip));
    else out.push(...scalar(group, subject, `${prefix}${k}`, x, y));
  }
  return out;
}

function riskChanges(symbol: string, a: Doc, b: Doc): Change[] {
  const [x, y] = [a.data, b.data];
  const out: Change[] = [];
  for (const k of readingFields(x, y)) {
    if (x[k] === null && y[k] !== null)
      out.push({ group: 'readings', subject: symbol, field: k, old: null, new: 'a reading', level: 'info' });
    else if (x[k] !== null && y[k] === null)
      out.push({ group: 'readings', subject: symbol, field: k, old: 'a reading', new: null, level: 'info' });
    else out.push(...fields('readings', symbol, `${k}.`, x[k], y[k]));
  }
  out.push(...scalar('readings', symbol, 'as_of', x.as_of, y.as_of));
  out.push(...scalar('readings', symbol, 'market_cap_rank', x.market_cap_rank, y.market_cap_rank));
  out.push(...scalar('readings', symbol, 'free_tier', x.free_tier, y.free_tier));
  const [sa, sb] = [new Set<string>(x.stale_models), new Set<string>(y.stale_models)];
  for (const m of sb)
    if (!sa.has(m))
      out.push({ group: 'readings', subject: symbol, field: 'stale_models', old: null, new: `${m} became stale`, level: 'info' });
  for (const m of sa)
    if (!sb.has(m))
      out.push({ group: 'readings', subject: symbol, field: 'stale_models', old: `${m} was stale`, new: null, level: 'info' });
  for (const [name, version] of Object.entries({ ...a.model_version, ...b.model_version })) {
    const [va, vb] = [a.model_version?.[name], b.model_version?.[name]];
    if (va !== undefined && vb !== undefined && va !== vb)
      out.push({ group: 'contract', subject: symbol, field: `model_version.${name}`, old: va, new: vb ?? version, level: 'contract' });
  }
  return out;
}

function historyChanges(symbol: string, a: Doc | undefined, b: Doc | undefined): Change[] {
  const before: HistoryRow[] = a?.data.rows ?? [];
  const after = new Map<string, HistoryRow>((b?.data.rows ?? []).map((r: HistoryRow) => [r.date, r]));
  const out: Change[] = [];
  const lastBefore = before.at(-1)?.date;
  for (const row of before) {
    const now = after.get(row.date);
    if (!now) out.push({ group: 'history', subject: symbol, field: `row ${row.date}`, old: row.basis, new: null, level: 'alarm' });
    // The last as_published row may be replaced by a later build of the same day; every other row is final.
    else if (!same(row, now))
      out.push({
        group: 'history',
        subject: symbol,
        field: `row ${row.date}`,
        old: row,
        new: now,
        level: row.date === lastBefore && row.basis === 'as_published' ? 'info' : 'alarm',
      });
  }
  const known = new Set(before.map((r) => r.date));
  const added = [...after.values()].filter((r) => !known.has(r.date));
  if (added.length)
    out.push({
      group: 'history',
      subject: symbol,
      field: 'rows added',
      old: before.length,
      new: before.length + added.length,
      delta: added.length,
      level: 'info',
    });
  return out;
}

function catalogueChanges(a: Doc | undefined, b: Doc | undefined): Change[] {
  if (!a || !b) return [];
  const out: Change[] = [];
  const [sa, sb] = [Object.keys(a.assets), Object.keys(b.assets)];
  for (const s of sb)
    if (!a.assets[s]) out.push({ group: 'catalogue', subject: s, field: 'asset', old: null, new: 'added', level: 'info' });
  for (const s of sa)
    if (!b.assets[s]) out.push({ group: 'catalogue', subject: s, field: 'asset', old: 'present', new: 'removed', level: 'info' });
  for (const s of sb) if (a.assets[s]) out.push(...scalar('catalogue', s, 'universes', a.assets[s].universes, b.assets[s].universes));
  const [fa, fb] = [new Set<string>(a.free_tier), new Set<string>(b.free_tier)];
  for (const s of fb)
    if (!fa.has(s)) out.push({ group: 'catalogue', subject: s, field: 'free_tier', old: false, new: true, level: 'info' });
  for (const s of fa)
    if (!fb.has(s)) out.push({ group: 'catalogue', subject: s, field: 'free_tier', old: true, new: false, level: 'info' });
  return out;
}

export interface DiffResult {
  changes: Change[];
  /** The tracked changes, as the change feed states them: what the new tree's refresh raised. */
  events: ChangeEvent[];
  files: { changed: number; added: number; removed: number; unchanged: number };
}

/** `--asset` names an asset neither tree holds. */
export class UnknownAsset extends Error {
  constructor(readonly symbol: string) {
    super(`--asset ${symbol}: neither tree holds that asset`);
  }
}

/** A file of either tree is not the shape of the file this version builds (a hand edit, another program's tree). */
export class UnexpectedShape extends Error {
  constructor(path: string, cause: Error) {
    super(`${path}: not the shape of the file this version builds, in the old or the new tree (${cause.message})`);
  }
}

export async function compareTrees(oldTree: Loader, newTree: Loader, only?: string): Promise<DiffResult> {
  const [ma, mb] = await Promise.all([oldTree.manifest(), newTree.manifest()]);
  if (only && !ma.files[TREE.risk(only)] && !mb.files[TREE.risk(only)]) throw new UnknownAsset(only);
  const paths = new Set([...Object.keys(ma.files), ...Object.keys(mb.files)]);
  const differ = [...paths].filter((p) => ma.files[p]?.sha256 !== mb.files[p]?.sha256).sort();
  // With --asset, the files counted are that asset's own.
  const counted = (ps: string[]) => (only ? ps.filter((p) => p.startsWith(`assets/${only}/`)) : ps);
  const files = {
    changed: counted(differ.filter((p) => ma.files[p] && mb.files[p])).length,
    added: counted(differ.filter((p) => !ma.files[p])).length,
    removed: counted(differ.filter((p) => !mb.files[p])).length,
    unchanged: counted([...paths].filter((p) => ma.files[p]?.sha256 === mb.files[p]?.sha256)).length,
  };
  // Each tree's copy where its manifest lists the file, else undefined (added or removed).
  const both = <T = Doc>(p: string) =>
    Promise.all([ma.files[p] ? oldTree.json<T>(p) : undefined, mb.files[p] ? newTree.json<T>(p) : undefined]);
  const changes: Change[] = [];
  // The tracked state of the assets whose risk files differ: only those can raise an event (a universe's context
  // is in every member's risk file).
  const [before, after] = [emptyState(), emptyState()];
  for (const p of differ) {
    try {
      await compareFile(p);
    } catch (e) {
      if (e instanceof TypeError) throw new UnexpectedShape(p, e);
      throw e;
    }
  }
  async function compareFile(p: string): Promise<void> {
    let m: RegExpExecArray | null;
    if ((m = /^assets\/([^/]+)\/risk\.json$/.exec(p))) {
      const [a, b] = await both(p);
      if (a) addRisk(before, a.data);
      if (b) addRisk(after, b.data);
      if (only && m[1] !== only) return;
      if (a && b) changes.push(...riskChanges(m[1]!, a, b));
    } else if ((m = /^assets\/([^/]+)\/history\/full\.json$/.exec(p))) {
      if (only && m[1] !== only) return;
      const [a, b] = await both(p);
      changes.push(...historyChanges(m[1]!, a, b));
    } else if ((m = /^market\/([^/]+)\/summary\.json$/.exec(p))) {
      if (only) return;
      const [a, b] = await both(p);
      if (a && b) changes.push(...fields('summaries', m[1]!, '', a.data, b.data, new Set(['universe'])));
    } else if (p === TREE.catalog) {
      const [a, b] = await both(p);
      changes.push(...catalogueChanges(a, b).filter((c) => !only || c.subject === only));
    } else if (p === TREE.openapi && !only) {
      // The served document also carries each build's examples: only its schemas are the contract.
      if (ma.contract && ma.contract === mb.contract) return;
      const id = (m: Manifest) => (m.contract ?? m.files[p]?.sha256)?.slice(0, 12) ?? null;
      changes.push({ group: 'contract', subject: 'openapi.json', field: 'document', old: id(ma), new: id(mb), level: 'contract' });
    } else if (p === TREE.health && !only) {
      const [a, b] = await both(p);
      changes.push(...scalar('contract', 'health.json', 'api_version', a?.api_version, b?.api_version, 'contract'));
    }
  }
  // The same model_version move shows in every asset: keep one line per model and version.
  const seen = new Set<string>();
  const deduped = changes.filter((c) => {
    if (c.group !== 'contract' || !c.field.startsWith('model_version.')) return true;
    const key = `${c.field}|${String(c.old)}|${String(c.new)}`;
    if (seen.has(key)) return false;
    seen.add(key);
    c.subject = 'risk.json';
    return true;
  });
  const events = changeEvents(before, after, mb.built_at)
    .map((e) => e.event)
    .filter((e) => !only || e.symbol === only);
  return { changes: deduped, events, files };
}

/** Exit status like diff(1): 0 same, 1 changes, 3 when a published history row changed or vanished. */
export const exitStatus = (r: DiffResult): number =>
  r.changes.some((c) => c.level === 'alarm') ? 3 : r.changes.length || r.events.length ? 1 : 0;
