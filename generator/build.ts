/**
 * `risk-readings build`: published pages in, the complete `v1/` tree out. Parse, assemble, validate in full,
 * then swap in; any failure leaves the previous tree as it was.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fg from 'fast-glob';
import { loadCatalog, type Asset } from './catalog/catalog.js';
import { HistoryLossError, type PublishedRows } from './api/history.js';
import { openApiDocument } from './openapi/document.js';
import { checkNoAssetDropped, planMarketWide } from './plan-tree.js';
import { AssetPlanner } from './plan-as-read.js';
import { forEachLimited } from './limited.js';
import { toJson } from './contract/json.js';
import { sha256, type Manifest } from './output/manifest.js';
import { TREE } from './contract/tree.js';
import { TreeInvalid, TreeWriter } from './output/tree-writer.js';
import { manifestSizes, reusable, writeNamed, writeTree } from './output/write-tree.js';
import { acquireLock, LockHeld } from './output/lock.js';
import { tidy } from './output/live-tree.js';
import { asEnvironmentError, EnvironmentError, EXIT } from './exit.js';
import { isUrl, openPrevious, PreviousTreeError, type PreviousTree } from './previous/previous-tree.js';
import { defaultCatalogPath, packageRoot } from './paths.js';
import { discover, KIND_MODEL, MARKET_PAGES, type Discovery, type PageRef } from './site/discover.js';
import { PARSER_VERSION, readSite, untouchedSince, type ParseCache } from './site/read-site.js';
import { pageGuard } from './site/guards.js';
import type { PageKind } from './site/readings.js';

export interface BuildOptions {
  pages: string;
  out: string;
  /** The previous tree: a folder holding v1/ or the URL of a deployed tree (default: `out`). */
  previous?: string;
  /** Bearer token for a `previous` URL. */
  previousToken?: string;
  catalog?: string;
  now?: string;
  keepGoing?: boolean;
  /** Start a new ledger when there is no previous tree (otherwise that is an error). */
  init?: boolean;
  jobs?: number;
  /** The base URL clients call, the served document's `servers` (default `/`, the origin it is served from). */
  publicUrl?: string;
}

/** A reading this build could not read and carried forward from the previous tree (--keep-going). */
export interface CarriedPage {
  file: string;
  kind: PageKind;
  symbol: string | null;
  reason: 'missing' | 'unreadable';
}

export interface BuildReport {
  assets: number;
  pages_read: number;
  pages_parsed: number;
  pages_reused: number;
  files_written: number;
  sector_sources: Record<string, string | null>;
  warnings: string[];
  errors: string[];
  ignored: string[];
  /** Files hard-linked from the previous tree instead of written. */
  files_linked: number;
  /** Pages whose previous readings were carried forward (--keep-going); the build then exits 4. */
  carried: CarriedPage[];
  /** Where the ledger was continued from (a folder or URL), or null for a new ledger (--init). */
  previous: string | null;
  /** What killed builds had left in --out and this build removed or recovered. */
  tidied: string[];
  /** Milliseconds per stage (discover, parse, assemble, validate, write), for benchmarks; never written to the tree. */
  timings: Record<string, number>;
}

export class BuildError extends Error {
  constructor(
    message: string,
    readonly report: Partial<BuildReport>,
    readonly problems: string[],
    readonly exitCode: number = EXIT.input,
  ) {
    super(message);
  }
}

export const CACHE_FILE = '.risk-readings-cache.json';

export function renderVersion(): string {
  const pkg = JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string };
  return `risk-readings ${pkg.version}`;
}

/** `--now` as an ISO instant to the second, or the clock. */
function builtAt(now?: string): string {
  const t = now ? Date.parse(now) : Date.now();
  if (!Number.isFinite(t)) throw new BuildError(`--now: expected an ISO 8601 time, found "${now}"`, {}, []);
  return new Date(t).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Kinds whose pages carry a weekly archive: mined only for an asset whose ledger starts. */
const ARCHIVE_KINDS = new Set<PageKind>([
  'crypto_gravity',
  'crypto_twap_risk',
  'crypto_sma_20w',
  'dca_regression',
  'equity_twap',
  'equity_sma_composite',
]);

/** Every asset's previous ledger rows, read and checked once, a few at a time. */
async function previousLedgers(
  previous: PreviousTree | null,
  symbols: string[],
  report: Partial<BuildReport>,
): Promise<Map<string, PublishedRows | undefined>> {
  const out = new Map<string, PublishedRows | undefined>();
  if (!previous) return out;
  await forEachLimited(symbols, 8, async (symbol) => {
    try {
      out.set(symbol, await previous.ledger(symbol));
    } catch (e) {
      if (e instanceof PreviousTreeError) throw new BuildError(e.message, report, [`${symbol}: ${e.message}`]);
      throw e;
    }
  });
  return out;
}

export async function build(opts: BuildOptions): Promise<BuildReport> {
  const at = builtAt(opts.now);
  const previousSource = opts.previous ?? opts.out;
  if (!existsSync(opts.pages)) throw new BuildError(`--pages ${opts.pages}: no such folder`, {}, []);
  if (!opts.init && !isUrl(previousSource) && !existsSync(previousSource)) throw noPrevious(previousSource);
  try {
    await mkdir(opts.out, { recursive: true });
    const lock = await acquireLock(opts.out, `risk-readings build --pages ${opts.pages} --out ${opts.out}`);
    try {
      return await buildLocked(opts, at, previousSource);
    } finally {
      await lock.release();
    }
  } catch (e) {
    if (e instanceof BuildError) throw e;
    if (e instanceof LockHeld) throw new BuildError(e.message, {}, [], EXIT.environment);
    if (e instanceof PreviousTreeError) throw new BuildError(e.message, {}, [], EXIT.input);
    const env = asEnvironmentError(e);
    if (env instanceof EnvironmentError) throw new BuildError(env.message, {}, [], EXIT.environment);
    throw e;
  }
}

/** A plan that would drop or rewrite a published history row, as the build's failure (exit 1); anything else as it is. */
const historyLoss = (e: unknown, report: Partial<BuildReport>) =>
  e instanceof HistoryLossError ? new BuildError(`history would lose a published row: ${e.message}`, report, [e.message]) : e;

const noPrevious = (source: string) =>
  new BuildError(
    `no previous tree at ${source}: its history ledger would start over. Pass --previous DIR|URL to continue the deployed ledger, or --init to start a new one on purpose`,
    {},
    [],
  );

async function buildLocked(opts: BuildOptions, at: string, previousSource: string): Promise<BuildReport> {
  const timings: Record<string, number> = {};
  let clock = performance.now();
  const lap = (stage: string) => {
    const now = performance.now();
    timings[stage] = Math.round(now - clock);
    clock = now;
  };
  // Read the previous tree once; then read the pages while each asset's documents are planned, serialised,
  // validated, written and compressed as soon as its pages are read; then the documents across assets; one swap.
  const prepared = await prepare(opts, previousSource, lap);
  const idle = await idleRebuild(prepared, opts, at);
  if (idle) {
    lap('unchanged');
    return { ...idle, timings };
  }
  const { previous, catalog } = prepared;
  // The previous ledgers, read once before parsing: they say which assets start a ledger now and so which pages
  // must also yield their weekly archive.
  const ledgers = await previousLedgers(
    previous,
    catalog.map((a) => a.symbol),
    prepared.baseReport,
  );
  lap('ledgers');
  const contractDoc = openApiDocument();
  const writer = await TreeWriter.open(
    opts.out,
    contractDoc,
    previous ? { manifest: previous.manifest, tree: previous.localTree } : undefined,
  );
  try {
    return { ...(await readAndPublish({ ...prepared, ledgers }, writer, contractDoc, opts, at, lap)), timings };
  } catch (e) {
    await writer.discard();
    throw e;
  }
}

/** What a build reads before the pages, and the report so far; throws the BuildError of an input it cannot build from. */
async function prepare(opts: BuildOptions, previousSource: string, lap: (stage: string) => void) {
  const catalog = loadCatalog(opts.catalog);
  const warnings: string[] = [];

  const { recovered, removed } = await tidy(opts.out);
  const tidied = [...(recovered ? [`recovered ${recovered} as v1`] : []), ...removed.map((r) => `removed ${r}`)];
  const found = await discover(opts.pages, catalog);
  if (found.pages.length === 0)
    throw new BuildError(`${opts.pages}: no pages at all; nothing can be published`, { tidied }, [
      `${opts.pages}: holds no source page of the catalogue`,
    ]);
  const previous = await openPrevious(previousSource, opts.previousToken);
  if (!previous && !opts.init) throw noPrevious(previousSource);
  const baseReport = { previous: previous ? previous.source : null, tidied, assets: catalog.length };
  try {
    checkNoAssetDropped(catalog, Object.keys(previous?.catalog?.assets ?? {}));
  } catch (e) {
    throw historyLoss(e, baseReport);
  }

  // A page the previous build read must be read again: missing, its model would quietly turn null.
  const vanished = missingSincePrevious(await pagesOfPrevious(previous), found);
  const missingFiles = new Set(vanished.map((v) => v.file));
  for (const m of found.missing)
    if (!missingFiles.has(m.file)) warnings.push(`${m.symbol}: ${m.file} is missing; ${KIND_MODEL[m.kind]} reads null`);
  if (vanished.length && !opts.keepGoing) {
    const perKind = Object.entries(countBy(vanished.map((v) => v.kind)))
      .sort()
      .map(([k, n]) => `${k} ${n}`)
      .join(', ');
    const named = vanished.map((v) => `${v.file}: missing (the previous build read it)`);
    throw new BuildError(
      `${vanished.length} page(s) the previous build read are missing (${perKind}); the previous tree is untouched`,
      { ...baseReport, pages_read: found.pages.length, warnings, errors: named },
      named,
    );
  }

  const cacheDir = previous?.localTree ? previousSource : opts.out;
  const prevCache = await readJson<ParseCache>(join(cacheDir, CACHE_FILE));
  lap('discover');
  // The pages this tree answers for, recorded so the next build can tell one that went missing (carried ones too,
  // so the guard holds until the page is back or the catalogue drops it).
  const pagesRead = [...new Set([...found.pages.map((p) => p.file), ...missingFiles])].sort();
  return { catalog, found, previous, prevCache, vanished, baseReport, warnings, pagesRead };
}

type Prepared = Awaited<ReturnType<typeof prepare>>;
type Report = Omit<BuildReport, 'timings'>;

/**
 * A rebuild where no page was touched since the previous build (size and mtime as its parse cache has them) and
 * nothing else read changed: the previous tree is re-linked without reading its ledgers or any page.
 */
async function idleRebuild(prepared: Prepared, opts: BuildOptions, at: string): Promise<Report | null> {
  const { catalog, found, previous, prevCache, vanished, warnings } = prepared;
  if (!previous?.localTree || !prevCache?.last_build || vanished.length) return null;
  const cache = untouchedSince(opts.pages, found.pages, prevCache, pageGuard(catalog, at));
  if (!cache) return null;
  const idle = await relinkIfIdle(previous, prevCache, inputFingerprint(opts, cache), opts, at, cache, warnings);
  return idle && { ...readReport(prepared, { parsed: 0, reused: found.pages.length }, [], []), ...idle };
}

/** The report of what a build read: its pages, and those it could not read. */
function readReport(
  { found, baseReport, warnings }: Prepared,
  site: { parsed: number; reused: number },
  errors: string[],
  carried: CarriedPage[],
) {
  return {
    ...baseReport,
    pages_read: found.pages.length,
    pages_parsed: site.parsed,
    pages_reused: site.reused,
    warnings,
    errors,
    ignored: found.ignored,
    carried,
  };
}

/** The market pages first (every asset needs their readings), then each asset's pages together, in catalogue order. */
function readingOrder(pages: PageRef[], catalog: Asset[]): PageRef[] {
  const rank = new Map(catalog.map((a, k) => [a.symbol, k]));
  const at = (p: PageRef) => (p.symbol === null ? -1 : (rank.get(p.symbol) ?? catalog.length));
  return [...pages].sort((a, b) => at(a) - at(b) || (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
}

/**
 * Reads the pages, planning each asset as soon as its pages are read, then plans the documents across assets and
 * publishes the tree; or re-links the previous tree when nothing read has changed.
 */
async function readAndPublish(
  prepared: Prepared & { ledgers: Map<string, PublishedRows | undefined> },
  writer: TreeWriter,
  contractDoc: ReturnType<typeof openApiDocument>,
  opts: BuildOptions,
  at: string,
  lap: (stage: string) => void,
): Promise<Report> {
  const { catalog, found, previous, prevCache, ledgers, vanished, warnings, pagesRead } = prepared;
  const planner = new AssetPlanner({
    catalog,
    pages: found.pages,
    vanished,
    ledgers,
    previousRisk: async (symbol) => previous?.risk(symbol),
    warnings,
    emit: (path, doc) => writer.add(path, doc),
  });
  // Pages touched since the previous build may still hold the same bytes (a sync that does not keep mtimes): such a
  // build may be idle, and plans only once a page's bytes differ.
  const mayBeIdle = !!previous?.localTree && !!prevCache?.last_build && vanished.length === 0;
  if (!mayBeIdle) planner.start();
  const startsLedger = (symbol: string) => !ledgers.get(symbol)?.length;
  const site = await readSite(
    opts.pages,
    readingOrder(found.pages, catalog),
    prevCache,
    (ref) => !!ref.symbol && ARCHIVE_KINDS.has(ref.kind) && startsLedger(ref.symbol),
    opts.jobs,
    {
      refuse: pageGuard(catalog, at),
      onRead: (read) => {
        planner.read(read);
        if (!read.result && !opts.keepGoing) planner.stop();
        else if (read.changed) planner.start();
      },
    },
  );
  lap('parse');
  const errors: string[] = [];
  const carried: CarriedPage[] = [];
  for (const [file, e] of site.errors) {
    errors.push(e.message);
    const ref = found.pages.find((p) => p.file === file)!;
    carried.push({ file, kind: ref.kind, symbol: ref.symbol, reason: 'unreadable' });
  }
  for (const v of vanished) carried.push({ ...v, reason: 'missing' });
  const reportSoFar = readReport(prepared, site, errors, carried);
  if (errors.length && !opts.keepGoing)
    throw new BuildError(`${errors.length} page(s) could not be read; the previous tree is untouched`, reportSoFar, errors);
  // Everything a build reads besides the previous tree, fingerprinted; null when a page failed (never idle then).
  const inputs = errors.length || vanished.length ? null : inputFingerprint(opts, site.cache);
  if (!planner.started) {
    const idle = await relinkIfIdle(previous, prevCache, inputs, opts, at, site.cache, warnings);
    if (idle) {
      await writer.discard();
      lap('unchanged');
      return { ...reportSoFar, ...idle };
    }
  }

  let planned;
  try {
    planned = await planner.finish();
  } catch (e) {
    throw historyLoss(e, reportSoFar);
  }
  warnings.push(...planned.warnings);
  const marketWide = planMarketWide(
    {
      catalog,
      pages: found.pages,
      market: planned.market,
      builtAt: at,
      renderVersion: renderVersion(),
      publicUrl: opts.publicUrl,
      info: contractDoc.info,
    },
    planned.plans,
    writer.objects,
  );
  for (const [path, doc] of marketWide) writer.add(path, doc);
  lap('assemble');

  let published;
  try {
    published = await writer.finish(at, pagesRead, lap);
  } catch (e) {
    if (e instanceof TreeInvalid)
      throw new BuildError(
        `the tree breaks the contract in ${e.problems.length} place(s); the previous tree is untouched`,
        reportSoFar,
        e.problems,
      );
    throw e;
  }
  const sectorSources = planned.market.sectorSources;
  await writeCache(
    opts.out,
    { ...site.cache, last_build: inputs ? { inputs, tree: treeHash(published.manifest) } : undefined, sector_sources: sectorSources },
    warnings,
  );
  lap('write');
  return { ...reportSoFar, files_written: published.files, files_linked: published.linked, sector_sources: sectorSources };
}

/**
 * Nothing read differs from what produced the previous tree: a build is idempotent, so that tree is the answer.
 * Its files are re-linked (each checked against its manifest) and only the manifest is rewritten.
 */
async function relinkIfIdle(
  previous: PreviousTree | null,
  prevCache: ParseCache | undefined,
  inputs: string | null,
  opts: BuildOptions,
  at: string,
  cache: ParseCache,
  warnings: string[],
): Promise<Pick<Report, 'files_written' | 'files_linked' | 'sector_sources'> | null> {
  if (!inputs || !previous?.localTree || prevCache?.last_build?.inputs !== inputs) return null;
  const reused = await reuseTree(previous.localTree, previous.manifest, opts.out, prevCache.last_build.tree, at);
  if (!reused) return null;
  await writeCache(opts.out, { ...cache, last_build: { inputs, tree: reused.tree } }, warnings);
  return { files_written: reused.files, files_linked: reused.linked, sector_sources: prevSectorSources(prevCache) };
}

/**
 * The generator's own code, hashed: any change to what the build writes changes this, version bump or not, so
 * an idle rebuild never re-links a tree an older build wrote.
 */
let codeHash: string | undefined;
function generatorCode(): string {
  if (codeHash === undefined) {
    const dir = dirname(fileURLToPath(import.meta.url));
    const files = fg.sync(['**/*.{js,ts}', '!**/*.d.ts', '!**/*.map'], { cwd: dir }).sort();
    codeHash = sha256(files.map((f) => `${f}:${sha256(readFileSync(join(dir, f)))}`).join('\n'));
  }
  return codeHash;
}

/** Everything a build reads besides the previous tree: page bytes, the catalogue, the code that reads them. */
function inputFingerprint({ catalog = defaultCatalogPath(), publicUrl = '/' }: BuildOptions, cache: ParseCache): string {
  const pages = Object.entries(cache.pages)
    .map(([f, e]) => `${f}:${e.hash}`)
    .sort()
    .join('\n');
  return sha256([generatorCode(), PARSER_VERSION, sha256(readFileSync(catalog)), publicUrl, pages].join('\n'));
}

/** A tree's identity: the hashes of all its files but the manifest (whose build time differs). */
const treeHash = (m: Manifest) => sha256(JSON.stringify(m.files));

async function reuseTree(
  previousTree: string,
  prev: Manifest,
  out: string,
  expectedTree: string,
  at: string,
): Promise<{ files: number; linked: number; tree: string } | null> {
  if (treeHash(prev) !== expectedTree) return null;
  const sizes = manifestSizes(prev);
  const paths = await reusable(previousTree, sizes);
  if (paths.size !== sizes.size) return null;
  const { linked, files } = await writeTree(out, new Map([[TREE.manifest, toJson({ ...prev, built_at: at })]]), at, {
    tree: previousTree,
    paths,
  });
  return { files, linked, tree: expectedTree };
}

const prevSectorSources = (cache: ParseCache) =>
  (cache as ParseCache & { sector_sources?: Record<string, string | null> }).sector_sources ?? {};

/**
 * The parse cache, replaced whole (a build killed while writing it leaves the old one, never half a file). It
 * only saves work: once the tree is published, failing to write it is a warning, not a failed build.
 */
async function writeCache(
  out: string,
  cache: ParseCache & { sector_sources?: Record<string, string | null> },
  warnings: string[],
): Promise<void> {
  const tmp = join(out, `${CACHE_FILE}.${process.pid}.tmp`);
  try {
    await writeNamed(tmp, JSON.stringify(cache));
    await rename(tmp, join(out, CACHE_FILE));
  } catch (e) {
    await rm(tmp, { force: true }).catch(() => {});
    const env = asEnvironmentError(e);
    warnings.push(`parse cache not saved (the next build parses every page): ${env instanceof Error ? env.message : String(env)}`);
  }
}

/**
 * The pages the previous build read: its manifest lists them; a tree from before that list existed is read
 * through its asset list's per-asset pages (market pages are then not guarded, once).
 */
async function pagesOfPrevious(previous: PreviousTree | null): Promise<string[]> {
  if (!previous) return [];
  if (previous.manifest.pages) return previous.manifest.pages;
  const list = await previous.file<{ data: { assets: { pages: Record<string, string> }[] } }>(TREE.assetList('ultra'));
  return (list?.data.assets ?? []).flatMap((a) => Object.values(a.pages));
}

/** Pages the previous build read that the catalogue still asks for and the folder no longer holds. */
function missingSincePrevious(previousPages: string[], found: Discovery): Omit<CarriedPage, 'reason'>[] {
  const expected = new Map(found.missing.map((m) => [m.file, m]));
  const present = new Set(found.pages.map((p) => p.file));
  const out: Omit<CarriedPage, 'reason'>[] = [];
  for (const file of previousPages) {
    if (present.has(file)) continue;
    const asset = expected.get(file);
    if (asset) out.push({ file, kind: asset.kind, symbol: asset.symbol });
    else if (MARKET_PAGES[file]) out.push({ file, kind: MARKET_PAGES[file], symbol: null });
  }
  return out.sort((a, b) => (a.file < b.file ? -1 : 1));
}

const countBy = (keys: string[]) => keys.reduce<Record<string, number>>((acc, k) => ((acc[k] = (acc[k] ?? 0) + 1), acc), {});

async function readJson<T>(file: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as T;
  } catch {
    return undefined;
  }
}
