/**
 * A tree opened through any reader of its bytes (a folder, a deployed URL, memory): its manifest first, then every
 * file read from it checked against that manifest, so a damaged or half-copied tree is refused rather than taken for
 * a fresh start. Below both readers (previous-tree.ts, http-tree.ts), which hand it their bytes.
 */
import { feedProblems } from '../contract/changes-page.js';
import { asManifest, isRecord } from '../contract/manifest-check.js';
import { TREE } from '../contract/tree.js';
import type { HistoryRow, Ledger } from '../contract/history-page.js';
import type { AssetRisk, Catalog, ChangeLedger } from '../contract/shapes.js';
import { sha256, type Manifest } from '../output/manifest.js';

/** The previous tree cannot serve as a ledger (exit 1: nothing is published). */
export class PreviousTreeError extends Error {
  constructor(
    message: string,
    /** What is wrong, without what follows from it: for a report that says its own consequence. */
    readonly problem = message,
  ) {
    super(message);
  }
}

/** The previous tree's `_catalog.json`, as far as the next build reads it. */
type PreviousCatalog = Pick<Catalog, 'assets'>;

export interface PreviousTree {
  /** Where it was read from, for messages and the report. */
  source: string;
  manifest: Manifest;
  catalog: PreviousCatalog | undefined;
  /** The folder holding its files, when it is on this machine (unchanged files are hard-linked from it). */
  localTree: string | null;
  /** The rows of the asset's ledger; undefined for an asset the previous tree never published. */
  ledger(symbol: string): Promise<HistoryRow[] | undefined>;
  /** The asset's published AssetRisk, for readings carried forward. */
  risk(symbol: string): Promise<AssetRisk | undefined>;
  /** The change feed's ledger; undefined for a tree built before the feed existed. */
  changes(): Promise<ChangeLedger | undefined>;
  /** Any file of the tree, parsed, checked against the manifest; undefined when the manifest does not list it. */
  file<T>(path: string): Promise<T | undefined>;
}

/**
 * Reads one file of a tree as bytes; undefined when the tree has no such file. `size` is the file's size in the
 * checked manifest (undefined for the manifest itself), so a reader over the network can refuse a longer body.
 */
export type ReadBytes = (path: string, size: number | undefined) => Promise<Uint8Array | undefined>;

export async function openTree(source: string, read: ReadBytes, localTree: string | null): Promise<PreviousTree> {
  const manifestBytes = await read(TREE.manifest, undefined);
  if (!manifestBytes) throw new PreviousTreeError(`${source}: the previous tree has no ${TREE.manifest}`);
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(manifestBytes).toString('utf8'));
  } catch (e) {
    throw new PreviousTreeError(`${source}: ${TREE.manifest} is not JSON (${(e as Error).message})`);
  }
  // A manifest listing no catalogue would read as an empty tree, and every ledger would start over.
  const manifest = asManifest(json, (problem) => new PreviousTreeError(`${source}: ${problem}`));
  if (!manifest.files[TREE.catalog]) throw new PreviousTreeError(`${source}: ${TREE.manifest} lists no ${TREE.catalog}`);
  const failed = (path: string, why: string) =>
    new PreviousTreeError(
      `${source}: ${path} ${why}; the previous tree fails its own manifest check, so its ledger cannot be continued`,
      `${source}: ${path} ${why}`,
    );
  const malformed = (path: string, why: string) =>
    new PreviousTreeError(`${source}: ${path} ${why}; the previous tree's ledger cannot be continued from it`, `${source}: ${path} ${why}`);

  /** A file of the tree as bytes, checked against the manifest; undefined when the manifest does not list it. */
  const verifiedBytes = async (path: string, absent = () => failed(path, `is listed in ${TREE.manifest} but absent`)) => {
    const entry = manifest.files[path];
    if (!entry) return undefined;
    const bytes = await read(path, entry.size);
    if (!bytes) throw absent();
    if (bytes.byteLength !== entry.size || sha256(bytes) !== entry.sha256)
      throw failed(path, `does not match ${TREE.manifest} (size or sha256)`);
    return bytes;
  };
  const parsed = <T>(path: string, bytes: Uint8Array): T => {
    try {
      return JSON.parse(Buffer.from(bytes).toString('utf8')) as T;
    } catch (e) {
      throw failed(path, `is not JSON (${(e as Error).message})`);
    }
  };
  /** A file of the tree, checked against the manifest and parsed; undefined when the manifest does not list it. */
  const verified = async <T>(path: string): Promise<T | undefined> => {
    const bytes = await verifiedBytes(path);
    return bytes && parsed<T>(path, bytes);
  };

  const catalog = await verified<PreviousCatalog>(TREE.catalog);
  if (catalog && !(isRecord(catalog.assets) && Object.values(catalog.assets).every(isRecord)))
    throw malformed(TREE.catalog, 'has no assets, each an object');
  // Market readings and carried readings ask for the same asset's AssetRisk more than once: read and check it once.
  const risks = new Map<string, Promise<AssetRisk | undefined>>();
  return {
    source,
    manifest,
    catalog,
    localTree,
    async ledger(symbol) {
      const path = TREE.historyFull(symbol);
      if (!manifest.files[path] && !catalog?.assets[symbol]) return undefined;
      const vanished = () =>
        new PreviousTreeError(`history would lose a published row: the previous tree lists ${symbol} but holds no ${path}`);
      if (!manifest.files[path]) throw vanished();
      const rows = parsed<Ledger>(path, (await verifiedBytes(path, vanished))!)?.data?.rows;
      if (!Array.isArray(rows)) throw malformed(path, 'has no data.rows');
      const odd = rows.findIndex((r) => !isRecord(r) || typeof r.date !== 'string' || typeof r.basis !== 'string');
      if (odd >= 0) throw malformed(path, `data.rows[${odd}] is not a history row (a date and a basis)`);
      return rows;
    },
    risk(symbol) {
      let r = risks.get(symbol);
      if (!r) risks.set(symbol, (r = verified<{ data: AssetRisk }>(TREE.risk(symbol)).then((d) => d?.data)));
      return r;
    },
    async changes() {
      const ledger = await verified<ChangeLedger>(TREE.changes);
      const problem = ledger && feedProblems(ledger)[0];
      if (problem) throw malformed(TREE.changes, problem);
      return ledger;
    },
    file: (path) => verified(path),
  };
}
