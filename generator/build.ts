/**
 * `risk-readings build`: published pages in, the complete `v1/` tree out. Parse, assemble, validate in full,
 * then swap in; any failure leaves the previous tree as it was.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fg from 'fast-glob';
import { loadCatalog } from './catalog/catalog.js';
import type { AssetRisk } from './api/asset-risk.js';
import { HistoryLossError, type Ledger } from './api/history.js';
import { openApiDocument } from './openapi/document.js';
import { planTree } from './plan-tree.js';
import { hasVariants, ENCODING_SUFFIX, ENCODINGS, type Encoding } from './contract/encodings.js';
import { variants } from './output/compress.js';
import { forEachLimited } from './limited.js';
import { jsonWriter, toJson } from './contract/json.js';
import { manifest, sha256, type Digest, type Manifest } from './output/manifest.js';
import { TREE } from './contract/tree.js';
import { validateTree } from './output/validate.js';
import { manifestSizes, reusable, StagedTree, writeNamed, writeTree } from './output/write-tree.js';
import { acquireLock, LockHeld } from './output/lock.js';
import { tidy } from './output/live-tree.js';
import { asEnvironmentError, EnvironmentError, EXIT } from './exit.js';
import { isUrl, openPrevious, PreviousTreeError, type PreviousTree } from './previous/previous-tree.js';
import { defaultCatalogPath, packageRoot } from './paths.js';
import { discover, KIND_MODEL, MARKET_PAGES, type Discovery } from './site/discover.js';
import { marketReadings } from './market-readings.js';
import { PARSER_VERSION, readSite, type ParseCache } from './site/read-site.js';
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

/** Every asset's previous ledger, read and checked once, a few at a time. */
async function previousLedgers(
  previous: PreviousTree | null,
  symbols: string[],
  report: Partial<BuildReport>,
): Promise<Map<string, Ledger | undefined>> {
  const out = new Map<string, Ledger | undefined>();
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
  // Read: the pages, and the previous tree once. Plan: the pure function to every document. Publish: one swap.
  const read = await readInputs(opts, at, previousSource, lap);
  const idle = await relinkIfIdle(read, opts, at);
  if (idle) {
    lap('unchanged');
    return { ...idle, timings };
  }
  const planned = await planFrom(read, opts, at);
  lap('assemble');
  return { ...(await publish(read, planned, opts, at, lap)), timings };
}

/** Everything a build reads, and the report so far; throws the BuildError of an input it cannot build from. */
async function readInputs(opts: BuildOptions, at: string, previousSource: string, lap: (stage: string) => void) {
  const catalog = loadCatalog(opts.catalog);
  const warnings: string[] = [];
  const errors: string[] = [];
  const carried: CarriedPage[] = [];

  const { recovered, removed } = await tidy(opts.out);
  const tidied = [...(recovered ? [`recovered ${recovered} as v1`] : []), ...removed.map((r) => `removed ${r}`)];
  const found = await discover(opts.pages, catalog);
  if (found.pages.length === 0)
    throw new BuildError(`${opts.pages}: no pages at all; nothing can be published`, { tidied }, [
      `${opts.pages}: holds no source page of the catalogue`,
    ]);
  const previous = await openPrevious(previousSource, opts.previousToken);
  if (!previous && !opts.init) throw noPrevious(previousSource);
  const baseReport = { previous: previous ? previous.source : null, tidied };

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
      { ...baseReport, assets: catalog.length, pages_read: found.pages.length, warnings, errors: named },
      named,
    );
  }

  const cacheDir = previous?.localTree ? previousSource : opts.out;
  const prevCache = await readJson<ParseCache>(join(cacheDir, CACHE_FILE));
  lap('discover');
  // The plan before parsing: the previous ledgers, read once, say which assets start a ledger now and so
  // which pages must also yield their weekly archive.
  const ledgers = await previousLedgers(
    previous,
    catalog.map((a) => a.symbol),
    { ...baseReport, assets: catalog.length },
  );
  lap('ledgers');
  const startsLedger = (symbol: string) => !ledgers.get(symbol)?.data.rows.length;
  const site = await readSite(
    opts.pages,
    found.pages,
    prevCache,
    (ref) => !!ref.symbol && ARCHIVE_KINDS.has(ref.kind) && startsLedger(ref.symbol),
    opts.jobs,
  );
  const guard = pageGuard(catalog, at);
  for (const ref of found.pages) {
    const result = site.results.get(ref.file);
    const problem = result && guard(result, ref);
    if (problem) {
      site.results.delete(ref.file);
      site.errors.set(ref.file, problem);
    }
  }
  lap('parse');
  const failedKinds = new Map<string, Set<PageKind>>();
  const fail = (symbol: string | null, kind: PageKind) => {
    const key = symbol ?? '(market)';
    if (!failedKinds.has(key)) failedKinds.set(key, new Set());
    failedKinds.get(key)!.add(kind);
  };
  for (const [file, e] of site.errors) {
    errors.push(e.message);
    const ref = found.pages.find((p) => p.file === file)!;
    fail(ref.symbol, ref.kind);
    carried.push({ file, kind: ref.kind, symbol: ref.symbol, reason: 'unreadable' });
  }
  for (const v of vanished) {
    fail(v.symbol, v.kind);
    carried.push({ ...v, reason: 'missing' });
  }
  const reportSoFar = {
    ...baseReport,
    assets: catalog.length,
    pages_read: found.pages.length,
    pages_parsed: site.parsed,
    pages_reused: site.reused,
    warnings,
    errors,
    ignored: found.ignored,
    carried,
  };
  if (errors.length && !opts.keepGoing)
    throw new BuildError(`${errors.length} page(s) could not be read; the previous tree is untouched`, reportSoFar, errors);
  // The pages this tree answers for, recorded so the next build can tell one that went missing (carried ones too,
  // so the guard holds until the page is back or the catalogue drops it).
  const pagesRead = [...new Set([...found.pages.map((p) => p.file), ...missingFiles])].sort();
  // Everything a build reads besides the previous tree, fingerprinted; null when a page failed (never idle then).
  const inputs =
    errors.length || vanished.length ? null : inputFingerprint(opts.catalog ?? defaultCatalogPath(), site.cache, opts.publicUrl);
  return { catalog, found, previous, prevCache, ledgers, site, failedKinds, reportSoFar, warnings, pagesRead, inputs };
}

type Inputs = Awaited<ReturnType<typeof readInputs>>;
type Report = Omit<BuildReport, 'timings'>;

/**
 * Nothing read differs from what produced the previous tree: a build is idempotent, so that tree is the answer.
 * Its files are re-linked (each checked against its manifest) and only the manifest is rewritten.
 */
async function relinkIfIdle(read: Inputs, opts: BuildOptions, at: string): Promise<Report | null> {
  const { previous, prevCache, inputs, site, warnings, reportSoFar } = read;
  if (!inputs || !previous?.localTree || prevCache?.last_build?.inputs !== inputs) return null;
  const reused = await reuseTree(previous.localTree, previous.manifest, opts.out, prevCache.last_build.tree, at);
  if (!reused) return null;
  await writeCache(opts.out, { ...site.cache, last_build: { inputs, tree: reused.tree } }, warnings);
  return { ...reportSoFar, files_written: reused.files, files_linked: reused.linked, sector_sources: prevSectorSources(prevCache) };
}

/** The plan: the market readings and the previous readings of failed pages, then planTree over all of it. */
async function planFrom(read: Inputs, opts: BuildOptions, at: string) {
  const { catalog, found, previous, ledgers, site, failedKinds, reportSoFar, warnings } = read;
  const prevRisk = async (symbol: string) => previous?.risk(symbol);
  const market = await marketReadings([...site.results.values()], failedKinds.get('(market)') ?? new Set(), catalog, prevRisk, warnings);
  // The previous tree is read here, before the plan: the readings of the assets whose pages failed.
  const prevRisks = new Map<string, AssetRisk | undefined>();
  for (const asset of catalog) if (failedKinds.has(asset.symbol)) prevRisks.set(asset.symbol, await prevRisk(asset.symbol));
  const contractDoc = openApiDocument();
  let planned;
  try {
    planned = planTree({
      catalog,
      pages: found.pages,
      results: site.results.values(),
      failedKinds,
      market,
      previous: { ledgers, risks: prevRisks, assets: Object.keys(previous?.catalog?.assets ?? {}) },
      builtAt: at,
      renderVersion: renderVersion(),
      publicUrl: opts.publicUrl,
      info: contractDoc.info,
    });
  } catch (e) {
    if (e instanceof HistoryLossError) throw new BuildError(`history would lose a published row: ${e.message}`, reportSoFar, [e.message]);
    throw e;
  }
  warnings.push(...planned.warnings);
  return { objects: planned.objects, sectorSources: market.sectorSources, contractDoc };
}

/** Serialise, validate against the closed contract, compress, and swap the new tree in whole. */
async function publish(
  read: Inputs,
  { objects, sectorSources, contractDoc }: Awaited<ReturnType<typeof planFrom>>,
  opts: BuildOptions,
  at: string,
  lap: (stage: string) => void,
): Promise<Report> {
  const { previous, ledgers, site, pagesRead, inputs, reportSoFar, warnings } = read;
  const prevManifest = previous?.manifest;
  // Each file as UTF-8 once: hashed, compressed and written from the same bytes.
  const texts = new Map<string, Buffer>();
  // Rows carried from the previous ledger are written as its file spelled them: most of a day's history bytes.
  const serialize = jsonWriter(previous?.rowTexts);
  for (const [path, doc] of [...objects.entries()].sort(([a], [b]) => (a < b ? -1 : 1))) texts.set(path, Buffer.from(serialize(doc)));
  const tree = manifest(texts, at, pagesRead, sha256(toJson(contractDoc)));
  // Files byte-identical to the previous tree (under the same contract) need neither a schema pass nor a write.
  const unchanged = new Set<string>();
  if (prevManifest?.contract === tree.contract) {
    for (const [path, entry] of Object.entries(tree.files)) if (prevManifest!.files[path]?.sha256 === entry.sha256) unchanged.add(path);
  }
  const plan = await planFiles(
    tree,
    texts,
    unchanged,
    previous?.localTree ? { tree: previous.localTree, manifest: prevManifest! } : undefined,
  );
  lap('serialize');
  // Files go to a staging folder while this thread validates and zlib's threads compress; a tree that fails
  // validation is discarded with its staging folder, so nothing of it is ever seen.
  const staged = await StagedTree.open(opts.out);
  staged.write(plan.write);
  const compressing = forEachLimited(plan.compress, COMPRESS_CONCURRENCY, async (path) => {
    const v = await variants(path, texts.get(path)!);
    tree.files[path]!.encodings = Object.fromEntries(ENCODINGS.map((e) => [e, v[e].digest])) as Record<Encoding, Digest>;
    staged.write(ENCODINGS.map((e) => [v[e].path, v[e].bytes]));
  }).then(
    () => null,
    (e: unknown) => ({ error: e }),
  );
  // The previous ledger's rows passed this same contract when they were published.
  const checkedRows = new WeakSet<object>();
  if (prevManifest?.contract === tree.contract) for (const l of ledgers.values()) for (const r of l?.data.rows ?? []) checkedRows.add(r);
  const problems = await validateTree(objects, contractDoc, unchanged, checkedRows);
  lap('validate');
  const compressed = await compressing;
  if (problems.length || compressed) await staged.discard();
  if (problems.length)
    throw new BuildError(
      `the tree breaks the contract in ${problems.length} place(s); the previous tree is untouched`,
      reportSoFar,
      problems,
    );
  if (compressed) throw compressed.error;
  lap('compress');

  const { linked, files } = await staged.publish(
    toJson(tree),
    at,
    previous?.localTree ? { tree: previous.localTree, paths: plan.lend } : undefined,
  );
  await writeCache(
    opts.out,
    { ...site.cache, last_build: inputs ? { inputs, tree: treeHash(tree) } : undefined, sector_sources: sectorSources },
    warnings,
  );
  lap('write');
  return { ...reportSoFar, files_written: files, files_linked: linked, sector_sources: sectorSources };
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
function inputFingerprint(catalogFile: string, cache: ParseCache, publicUrl = '/'): string {
  const pages = Object.entries(cache.pages)
    .map(([f, e]) => `${f}:${e.hash}`)
    .sort()
    .join('\n');
  return sha256([generatorCode(), PARSER_VERSION, sha256(readFileSync(catalogFile)), publicUrl, pages].join('\n'));
}

/**
 * What each file of the new tree costs: lent from the previous tree (unchanged and still intact there, its
 * variants too, whose digests go into the manifest now), or written; and which files need their variants made.
 */
async function planFiles(
  tree: Manifest,
  texts: Map<string, Uint8Array>,
  unchanged: Set<string>,
  prev?: { tree: string; manifest: Manifest },
) {
  const variantPath = (path: string, e: Encoding) => path + ENCODING_SUFFIX[e];
  const candidates = new Map<string, number>();
  if (prev) {
    const sizes = manifestSizes(prev.manifest);
    for (const path of unchanged)
      for (const p of [path, ...ENCODINGS.map((e) => variantPath(path, e))]) if (sizes.has(p)) candidates.set(p, sizes.get(p)!);
  }
  const lend = prev ? await reusable(prev.tree, candidates) : new Set<string>();
  const write = new Map<string, string | Uint8Array>();
  const toCompress: string[] = [];
  for (const [path, entry] of Object.entries(tree.files)) {
    if (!lend.has(path)) write.set(path, texts.get(path)!);
    if (!hasVariants(path, entry.size)) continue;
    const before = prev?.manifest.files[path]?.encodings;
    // Variants of an unchanged file are its previous ones, even where the file itself is written again.
    if (unchanged.has(path) && before && ENCODINGS.every((e) => before[e] && lend.has(variantPath(path, e)))) {
      entry.encodings = Object.fromEntries(ENCODINGS.map((e) => [e, before[e]!])) as Record<Encoding, Digest>;
      continue;
    }
    for (const e of ENCODINGS) lend.delete(variantPath(path, e));
    toCompress.push(path);
  }
  return { write, lend, compress: toCompress };
}

/**
 * Files compressed at once: each holds its encoder's state and its output until written, and all of them at once
 * took the build's peak memory from 230 MB to 860 MB for no gain on two cores.
 */
const COMPRESS_CONCURRENCY = 4;

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
