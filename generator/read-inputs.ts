/**
 * The build's first step: read what a tree is planned from, and return it as plain data (build-inputs.ts).
 * `openInputs` reads what tells whether anything changed (catalogue, the pages folder's listing, the previous tree's
 * manifest, the parse cache); `readInputs` reads the rest (the ledgers, the pages, the readings carried for pages
 * that failed). Each throws the BuildError of an input the build cannot publish from. It plans nothing and writes
 * nothing: whether the rebuild is idle is idle.ts's question, the plan plan-tree.ts's, the writing output/'s.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { firstMember, type PreviousFeedRead, type ReadInputs } from './build-inputs.js';
import { buildReport, BuildError, type BuildOptions, type CarriedPage } from './build-report.js';
import { EXIT } from './exit.js';
import { loadCatalog, UNIVERSES, type Asset } from './catalog/catalog.js';
import type { AssetRisk, HistoryRow } from './contract/shapes.js';
import { TREE } from './contract/tree.js';
import { refuseInitOverLedger } from './ledger-start.js';
import { forEachLimited } from './limited.js';
import { openPrevious, PreviousTreeError, type PreviousTree } from './previous/previous-tree.js';
import { discover, marketKindOf, type Discovery } from './site/discover.js';
import { pageGuard } from './site/guards.js';
import { readSite, type ParseCache, type SiteRead } from './site/read-site.js';
import { KINDS, readingsHad, readingWords, type PageKind } from './site/registry.js';
import { carriedFrom, type Carried } from './site/carry.js';
import type { ReadingKey } from './site/readings.js';

/** The parse cache beside the tree: each page's size, mtime, hash and reading, and what the last build read. */
export const CACHE_FILE = '.risk-readings-cache.json';

/** The parse cache as a build leaves it: with the sector sources, which an idle rebuild reports again. */
export type BuildCache = ParseCache & { sector_sources?: Record<string, string | null> };

export type OpenedInputs = Awaited<ReturnType<typeof openInputs>>;

/**
 * What a build reads before its pages and ledgers. `tidied` is what the build removed of killed builds' leftovers
 * before reading, for the report.
 */
export async function openInputs(opts: BuildOptions, previousSource: string, tidied: string[]) {
  const catalog = readCatalog(opts.catalog);
  const warnings: string[] = [];
  const found = await discover(opts.pages, catalog);
  for (const { file, target } of found.outside) warnings.push(`${file}: a link to ${target}, outside --pages; not read`);
  if (found.pages.length === 0)
    throw new BuildError(`${opts.pages}: no pages at all; nothing can be published`, { tidied }, [
      `${opts.pages}: holds no source page of the catalogue`,
    ]);
  const previous = await openPrevious(previousSource, opts.previousToken);
  if (!previous && !opts.init) throw noPrevious(previousSource);
  if (opts.init) await refuseInitOverLedger(previous, previousSource, opts.out);

  // A page the previous build read must be read again: missing, its model would quietly turn null.
  const vanished = missingSincePrevious(await pagesOfPrevious(previous), found);
  const missingFiles = new Set(vanished.map((v) => v.file));
  for (const m of found.missing)
    if (!missingFiles.has(m.file)) warnings.push(`${m.symbol}: ${m.file} is missing; ${readNull(readingsOf(m, catalog))}`);
  const cache = await readJson<BuildCache>(join(previous?.localTree ? previousSource : opts.out, CACHE_FILE));
  // The pages this tree answers for, recorded so the next build can tell one that went missing (carried ones too,
  // so the guard holds until the page is back or the catalogue drops it).
  const pagesRead = [...new Set([...found.pages.map((p) => p.file), ...missingFiles])].sort();
  const opened = { catalog, found, previous, cache, vanished, warnings, tidied, pagesRead };
  if (vanished.length && !opts.keepGoing) {
    const perKind = Object.entries(countBy(vanished.map((v) => v.kind)))
      .sort()
      .map(([k, n]) => `${k} ${n}`)
      .join(', ');
    const named = vanished.map((v) => `${v.file}: missing (the previous build read it)`);
    throw new BuildError(
      `${vanished.length} page(s) the previous build read are missing (${perKind}); the previous tree is untouched`,
      buildReport(opened, { errors: named, wouldCarry: vanished.map((v) => carriedPage(v, 'missing', catalog)) }),
      named,
    );
  }
  return opened;
}

/** What the read step gives: the plan's inputs, and what the report says of the read. */
export interface ReadStep {
  inputs: ReadInputs;
  site: SiteRead;
  carried: CarriedPage[];
}

/** The ledgers, then the pages (those of an asset whose ledger starts yield their weekly archive), then what failed. */
export async function readInputs(opened: OpenedInputs, opts: BuildOptions, at: string): Promise<ReadStep> {
  const { catalog, found, previous, cache, vanished } = opened;
  const ledgers = new Map<string, HistoryRow[]>();
  await fromPrevious(opened, catalog, async (symbol) => {
    const rows = await previous!.ledger(symbol);
    if (rows) ledgers.set(symbol, rows);
  });
  const site = await readSite(opts.pages, found.pages, cache, {
    wantsArchive: (ref) => !!ref.symbol && KINDS[ref.kind].archive && !ledgers.get(ref.symbol)?.length,
    jobs: opts.jobs,
    refuse: pageGuard(catalog, at, ledgers),
    progress: opts.progress,
  });
  const carried: CarriedPage[] = [];
  for (const file of site.errors.keys()) {
    const ref = found.pages.find((p) => p.file === file)!;
    carried.push(carriedPage(ref, 'unreadable', catalog));
  }
  for (const v of vanished) carried.push(carriedPage(v, 'missing', catalog));
  if (site.errors.size && !opts.keepGoing) {
    const errors = [...site.errors.values()].map((e) => e.message);
    // Nothing was published, so nothing was carried: the report says what --keep-going would have carried.
    throw new BuildError(
      `${errors.length} page(s) could not be read; the previous tree is untouched`,
      buildReport(opened, { site, errors, wouldCarry: carried }),
      errors,
    );
  }

  const failedKinds = new Map<string, Set<PageKind>>();
  const failedMarket = new Set<PageKind>();
  for (const c of carried) {
    if (c.symbol === null) failedMarket.add(c.kind);
    else failedKinds.set(c.symbol, (failedKinds.get(c.symbol) ?? new Set()).add(c.kind));
  }
  const risks = new Map<string, AssetRisk | undefined>();
  const carrying = assetsCarrying(catalog, failedKinds, failedMarket, site);
  await fromPrevious(opened, carrying, async (symbol) => void risks.set(symbol, await previous!.risk(symbol)));
  const kept = keptReadings(carried, risks, opened.warnings);
  const feed = previous ? await previousFeed(opened) : undefined;
  return {
    inputs: {
      catalog,
      pages: found.pages,
      results: site.results,
      carried: kept,
      failedMarket,
      previous: { ledgers, risks, assets: Object.keys(previous?.catalog?.assets ?? {}), feed },
    },
    site,
    carried,
  };
}

/**
 * The assets whose previous readings a plan may carry: those with a failed page, the first member of each universe
 * when a market page failed (its market context stands for the universe's), every crypto asset when no ranking was
 * read (their ranks make the free tier).
 */
function assetsCarrying(catalog: Asset[], failedKinds: Map<string, unknown>, failedMarket: Set<PageKind>, site: SiteRead): Asset[] {
  const symbols = new Set(failedKinds.keys());
  if (failedMarket.size) for (const u of UNIVERSES) symbols.add(firstMember(catalog, u)?.symbol ?? '');
  if (!site.results.some((r) => r.ranking)) for (const a of catalog) if (a.asset_class === 'CRYPTO') symbols.add(a.symbol);
  return catalog.filter((a) => symbols.has(a.symbol));
}

/**
 * The change feed's ledger and the previous tree's AssetRisk files, which this refresh's events are measured from.
 * A risk file that fails the manifest check is rewritten by this build like any other; its asset raises no event
 * this time (the plan says so, with any file it finds of another shape).
 */
async function previousFeed(opened: OpenedInputs): Promise<PreviousFeedRead> {
  const previous = opened.previous!;
  const symbols = Object.keys(previous.catalog?.assets ?? {});
  const found = new Map<string, AssetRisk>();
  const unread = new Map<string, string>();
  await forEachLimited(symbols, 8, async (symbol) => {
    try {
      const risk = await previous.risk(symbol);
      if (risk) found.set(symbol, risk);
    } catch (e) {
      if (!(e instanceof PreviousTreeError)) throw e;
      unread.set(symbol, e.problem);
    }
  });
  const ledger = await refusedAsBuild(opened, () => previous.changes());
  // In the catalogue's order, whatever order the reads finished in.
  const risks = new Map(symbols.flatMap((s) => (found.has(s) ? [[s, found.get(s)!] as const] : [])));
  return { source: previous.source, ledger, risks, unread };
}

/** `read` for each asset the previous tree may hold, a few at a time; its refusal as the build's failure. */
async function fromPrevious(opened: OpenedInputs, assets: Asset[], read: (symbol: string) => Promise<void>): Promise<void> {
  if (!opened.previous) return;
  await forEachLimited(assets, 8, ({ symbol }) => refusedAsBuild(opened, () => read(symbol), `${symbol}: `));
}

/** A read of the previous tree; the tree's refusal of it (PreviousTreeError) as the build's failure, with its report. */
async function refusedAsBuild<T>(opened: OpenedInputs, read: () => Promise<T>, about = ''): Promise<T> {
  try {
    return await read();
  } catch (e) {
    if (e instanceof PreviousTreeError) throw new BuildError(e.message, buildReport(opened, {}), [`${about}${e.message}`]);
    throw e;
  }
}

export const noPrevious = (source: string) =>
  new BuildError(
    `no previous tree at ${source}: its history ledger would start over. Pass --previous DIR|URL to continue the deployed ledger, or --init to start a new one on purpose`,
    {},
    [],
  );

/** The catalogue: a --catalog that does not exist is the command's mistake (exit 2), one that does not parse the input's (1). */
function readCatalog(file: string | undefined): Asset[] {
  try {
    return loadCatalog(file);
  } catch (e) {
    throw new BuildError((e as Error).message, {}, [], file !== undefined && !existsSync(file) ? EXIT.usage : EXIT.input);
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
function missingSincePrevious(previousPages: string[], found: Discovery): Omit<CarriedPage, 'reason' | 'readings'>[] {
  const expected = new Map(found.missing.map((m) => [m.file, m]));
  const present = new Set(found.pages.map((p) => p.file));
  const out: Omit<CarriedPage, 'reason' | 'readings'>[] = [];
  for (const file of previousPages) {
    if (present.has(file)) continue;
    const asset = expected.get(file);
    if (asset) out.push({ file, kind: asset.kind, symbol: asset.symbol });
    else {
      const kind = marketKindOf(file);
      if (kind) out.push({ file, kind, symbol: null });
    }
  }
  return out.sort((a, b) => (a.file < b.file ? -1 : 1));
}

/** The readings a page stands for: an asset page's, those its asset has (site/readings.ts); a market page's, all of its kind's. */
function readingsOf(ref: { kind: PageKind; symbol: string | null }, catalog: Asset[]): ReadingKey[] {
  const asset = ref.symbol === null ? undefined : catalog.find((a) => a.symbol === ref.symbol);
  return asset ? readingsHad(ref.kind, asset) : [...KINDS[ref.kind].readings];
}

const readNull = (keys: ReadingKey[]) => `${readingWords(keys)} ${keys.length > 1 ? 'read' : 'reads'} null`;

/** A page that failed, with the readings it stands for (before the previous tree says which of them it can keep). */
const carriedPage = (ref: Omit<CarriedPage, 'reason' | 'readings'>, reason: CarriedPage['reason'], catalog: Asset[]): CarriedPage => ({
  ...ref,
  reason,
  readings: readingsOf(ref, catalog),
});

/**
 * Per asset, the previous tree's part of each reading of its failed pages: what the plan publishes for them. Each
 * carried page is left naming the readings it kept, and a reading the previous tree did not hold is a warning
 * naming it as null, so that the report says what the tree holds.
 */
function keptReadings(carried: CarriedPage[], risks: ReadonlyMap<string, AssetRisk | undefined>, warnings: string[]) {
  const kept = new Map<string, Carried>();
  for (const page of carried) {
    if (page.symbol === null) continue;
    const found = carriedFrom(risks.get(page.symbol), page.readings);
    kept.set(page.symbol, { ...kept.get(page.symbol), ...found });
    const lost = page.readings.filter((r) => !(r in found));
    page.readings = page.readings.filter((r) => r in found);
    if (lost.length)
      warnings.push(`${page.symbol}: ${page.file} failed and the previous tree holds no ${readingWords(lost)}; ${readNull(lost)}`);
  }
  return kept;
}

const countBy = (keys: string[]) => keys.reduce<Record<string, number>>((acc, k) => ((acc[k] = (acc[k] ?? 0) + 1), acc), {});

async function readJson<T>(file: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as T;
  } catch {
    return undefined;
  }
}
