/**
 * `risk-readings build`: published pages in, the complete `v1/` tree out, in three steps under the output's lock,
 * once what it is given has been checked (build-options.ts).
 *   read     the catalogue, the pages, the previous tree (read-inputs.ts)
 *   plan     every document of the tree, a pure function of what was read (plan-tree.ts)
 *   publish  serialise, validate, hard-link what is unchanged, compress, write, swap (output/publish-tree.ts)
 * Between plan and publish the ledger's invariant is checked: no build drops or rewrites a published row. A rebuild
 * whose inputs are all as before re-links the previous tree instead. Any failure leaves the previous tree as it was.
 */
import { mkdir, rename, rm, rmdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { AssetRisk } from './api/asset-risk.js';
import { checkFeedKept, FeedLossError } from './api/changes.js';
import { checkLedgerKept, HistoryLossError } from './api/history.js';
import { checkOptions } from './build-options.js';
import { buildReport, BuildError, type BuildOptions, type BuildReport } from './build-report.js';
import type { Health } from './contract/shapes.js';
import { instant, newest } from './contract/time.js';
import { TREE } from './contract/tree.js';
import { asEnvironmentError, EnvironmentError, EXIT } from './exit.js';
import { fingerprint, idleCache } from './idle.js';
import { ApiInfo, openApiDocument } from './openapi/document.js';
import { tidy } from './output/live-tree.js';
import { acquireLock, LockHeld } from './output/lock.js';
import { treeHash } from './output/manifest.js';
import { publishTree, relinkTree, TreeInvalid, writeNamed, type Published } from './output/publish-tree.js';
import { renderVersion } from './paths.js';
import { planTree, type PlannedTree } from './plan-tree.js';
import { PreviousTreeError } from './previous/previous-tree.js';
import { CACHE_FILE, openInputs, readInputs, type BuildCache, type OpenedInputs } from './read-inputs.js';

export { BuildError, type BuildOptions, type BuildReport } from './build-report.js';

export async function build(opts: BuildOptions): Promise<BuildReport> {
  const { at, previousSource, apiInfo } = checkOptions(opts);
  let made: string | undefined;
  try {
    made = await mkdir(opts.out, { recursive: true });
    const lock = await acquireLock(opts.out, `risk-readings build --pages ${opts.pages} --out ${opts.out}`);
    try {
      return await buildLocked(opts, at, previousSource, apiInfo);
    } finally {
      await lock.release();
    }
  } catch (e) {
    // A folder this build made goes with it where it left nothing there: a failed build leaves nothing behind.
    if (made) await removeEmpty(opts.out, made);
    if (e instanceof BuildError) throw e;
    if (e instanceof LockHeld) throw new BuildError(e.message, {}, [], EXIT.environment);
    if (e instanceof PreviousTreeError) throw new BuildError(e.message, {}, [], EXIT.input);
    const env = asEnvironmentError(e);
    if (env instanceof EnvironmentError) throw new BuildError(env.message, {}, [], EXIT.environment);
    throw e;
  }
}

/**
 * Pages whose newest reading is older than the previous tree's newest (a stale copy of the site, decision 113): their
 * readings would take the API back, and the change feed would publish the step back as events. Null when they are not.
 */
function olderThanPrevious(previous: ReadonlyMap<string, AssetRisk> | undefined, planned: PlannedTree): string | null {
  const was = newest([...(previous?.values() ?? [])].map((r) => r.as_of));
  const is = (planned.objects.get(TREE.health) as Health).newest_reading;
  if (!was || !is || !(instant(is) < instant(was))) return null;
  return `these pages are older than the previous tree: their newest reading is dated ${is}, the tree's ${was} (a stale copy of the site?); the previous tree is untouched`;
}

/** `dir` and each folder above it up to `top`, removed while empty (rmdir refuses a folder that is not). */
async function removeEmpty(dir: string, top: string): Promise<void> {
  const last = resolve(top);
  for (let d = resolve(dir); ; d = dirname(d)) {
    const removed = await rmdir(d).then(
      () => true,
      () => false,
    );
    if (!removed || d === last || d === dirname(d)) return;
  }
}

async function buildLocked(opts: BuildOptions, at: string, previousSource: string, apiInfo: ApiInfo | undefined): Promise<BuildReport> {
  const timings: Record<string, number> = {};
  let clock = performance.now();
  const lap = (step: string) => {
    const now = performance.now();
    timings[step] = Math.round(now - clock);
    clock = now;
  };

  const { recovered, removed } = await tidy(opts.out);
  const tidied = [...(recovered ? [`recovered ${recovered} as v1`] : []), ...removed.map((r) => `removed ${r}`)];
  const opened = await openInputs(opts, previousSource, tidied);
  const relinked = await relinkIfIdle(opened, opts, at, apiInfo);
  if (relinked) {
    lap('relink');
    return { ...relinked, timings } as BuildReport;
  }
  const read = await readInputs(opened, opts, at);
  lap('read');

  let planWarnings: string[] = [];
  const report = (got: { published?: Published; sectorSources?: PlannedTree['sectorSources'] } = {}) =>
    buildReport(opened, {
      site: read.site,
      errors: [...read.site.errors.values()].map((e) => e.message),
      carried: read.carried,
      warnings: planWarnings,
      relinked: false,
      ...got,
    });
  const contract = openApiDocument();
  let planned: PlannedTree;
  try {
    planned = planTree({
      ...read.inputs,
      builtAt: at,
      renderVersion: renderVersion(),
      publicUrl: opts.publicUrl,
      apiInfo,
      info: contract.info,
    });
    for (const [symbol, rows] of read.inputs.previous.ledgers) checkLedgerKept(symbol, rows, planned.ledgers.get(symbol) ?? []);
    checkFeedKept(read.inputs.previous.feed?.ledger, planned.feed);
    const older = olderThanPrevious(read.inputs.previous.feed?.risks, planned);
    if (older) throw new BuildError(older, report(), [older]);
  } catch (e) {
    if (e instanceof HistoryLossError) throw new BuildError(`history would lose a published row: ${e.message}`, report(), [e.message]);
    if (e instanceof FeedLossError)
      throw new BuildError(`the change feed would lose a published event: ${e.message}`, report(), [e.message]);
    throw e;
  }
  planWarnings = planned.warnings;
  lap('plan');

  let published: Published;
  try {
    published = await publishTree({
      out: opts.out,
      objects: planned.objects,
      contract,
      builtAt: at,
      pages: opened.pagesRead,
      previous: opened.previous ? { manifest: opened.previous.manifest, tree: opened.previous.localTree } : undefined,
    });
  } catch (e) {
    if (e instanceof TreeInvalid)
      throw new BuildError(
        `the tree breaks the contract in ${e.problems.length} place(s); the previous tree is untouched`,
        report(),
        e.problems,
      );
    throw e;
  }
  // What this build read, fingerprinted for the next build's idle question; none when a page failed (never idle then).
  const inputs =
    read.site.errors.size || opened.vanished.length
      ? null
      : fingerprint({ ...opened, apiInfo, publicUrl: opts.publicUrl }, read.site.cache);
  const lastBuild = inputs ? { inputs, tree: treeHash(published.manifest) } : undefined;
  await writeCache(opts.out, { ...read.site.cache, last_build: lastBuild, sector_sources: planned.sectorSources }, planWarnings);
  lap('publish');
  return { ...report({ published, sectorSources: planned.sectorSources }), timings } as BuildReport;
}

/**
 * An idle rebuild (idle.ts): the previous tree, whose manifest the cache names, is published again with every file
 * re-linked. Null when the build is not idle or the previous tree no longer holds its files intact.
 */
async function relinkIfIdle(
  opened: OpenedInputs,
  opts: BuildOptions,
  at: string,
  apiInfo: ApiInfo | undefined,
): Promise<Partial<BuildReport> | null> {
  const { previous, cache } = opened;
  const same = idleCache(
    { ...opened, apiInfo, publicUrl: opts.publicUrl, pagesDir: opts.pages, pages: opened.found.pages, vanished: opened.vanished.length },
    at,
  );
  if (!same || !previous?.localTree) return null;
  const published = await relinkTree(opts.out, previous.localTree, previous.manifest, at);
  if (!published) return null;
  const sectorSources = cache!.sector_sources ?? {};
  const warnings: string[] = [];
  await writeCache(opts.out, { ...same, last_build: cache!.last_build, sector_sources: sectorSources }, warnings);
  return buildReport(opened, {
    site: { parsed: 0, reused: opened.found.pages.length },
    published,
    sectorSources,
    warnings,
    relinked: true,
  });
}

/**
 * The parse cache, replaced whole (a build killed while writing it leaves the old one, never half a file). It
 * only saves work: once the tree is published, failing to write it is a warning, not a failed build.
 */
async function writeCache(out: string, cache: BuildCache, warnings: string[]): Promise<void> {
  const tmp = join(out, `${CACHE_FILE}.${process.pid}.tmp`);
  try {
    writeNamed(tmp, JSON.stringify(cache));
    await rename(tmp, join(out, CACHE_FILE));
  } catch (e) {
    await rm(tmp, { force: true }).catch(() => {});
    const env = asEnvironmentError(e);
    warnings.push(`parse cache not saved (the next build parses every page): ${env instanceof Error ? env.message : String(env)}`);
  }
}
