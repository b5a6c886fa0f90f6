/**
 * `npm run bench`: the build against its floor and at four times the site, the shim against bare Node, and the
 * paying callers' paths against the reference (paid.ts), each as a ratio in the same run (these machines are
 * noisy; absolute times are not what the project promises). Servers are loaded by wrk (load.ts), which must be on
 * PATH. Options: --assets N (default all), --scale K (the scaled site, K times the assets; default 4, 1 skips it),
 * --seconds S per load (default 5), --connections C (default 50), --repeats R builds (default 2), --rounds R of
 * the paid paths (default 3), --warm N requests each loaded server answers before any is measured (default
 * 150,000), --no-pin (leave processes where the scheduler puts them), --out FILE (default bench/results.json),
 * --only paid (the paid paths alone, over one build of the site), --only build (the builds alone; no wrk needed),
 * --node PATH (another Node binary, repeatable: the builds at both sizes also run under it, each line with the
 * options `risk-readings build` takes there). bench/README.md says how to read the table.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { loadCatalog } from '../generator/catalog/catalog.js';
import { isLedger } from '../generator/contract/tree.js';
import { writeSite } from '../fixtures/synth/site.js';
import { buildNodeOptions } from '../generator/node-options.js';
import { checkWrk, type Load } from './load.js';
import { median, paidPaths, paidTable } from './paid.js';
import { scaledCatalog, scaledSymbols } from './scaled-site.js';
import { loadServer, loadServersTogether, placement, startBenchServer, warmServersTogether, type Running, type Target } from './servers.js';
import { FULL_CORE, HALF_CORE, fixed, loadLine, sharedFairly, verdict } from './table.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : fallback;
};
const assets = Number(arg('assets', '0')) || undefined;
const scale = Number(arg('scale', '4'));
const seconds = Number(arg('seconds', '5'));
const connections = Number(arg('connections', '50'));
const repeats = Number(arg('repeats', '2'));
const rounds = Number(arg('rounds', '3'));
const warm = Number(arg('warm', '150000'));
const outFile = arg('out', join(root, 'bench', 'results.json'));
const only = arg('only', '');
if (only !== '' && only !== 'paid' && only !== 'build')
  throw new Error(`bench: --only ${only}: the parts that run alone are 'paid' and 'build'`);
/** A Node binary the builds run under, and the options `risk-readings build` runs under on its line (node-options.ts). */
interface NodeLine {
  path: string;
  version: string;
  options: string[];
}
function nodeLine(path: string): NodeLine {
  const version = path === process.execPath ? process.version : spawnSync(path, ['--version'], { encoding: 'utf8' }).stdout?.trim();
  if (!version || !/^v\d+\./.test(version)) throw new Error(`bench: --node ${path}: not a Node binary`);
  return { path, version, options: buildNodeOptions(version) };
}
/** This process's Node first: every build runs under it; the builds at both sizes run under the others too. */
const nodeLines = [process.execPath, ...process.argv.flatMap((a, i) => (a === '--node' ? [process.argv[i + 1]!] : []))].map(nodeLine);
const KEYS = join(root, 'fixtures', 'keys', 'example-keys.json');
const AUTH = { 'X-API-Key': 'rr_demo_ultra_key_not_secret' };
/** The shim section's loads taken side by side (a shim beside bare Node); the others ran alone. */
const SIDE_BY_SIDE = new Set(['bare_node_same_bytes', 'shim_risk', 'shim_risk_log_silent']);

/**
 * Flushes the page cache's dirty pages before a timed run: the setup's copies and deletions (a 50 MB tree) would
 * otherwise be written back during the next measurement and bill it for the setup's I/O. The pipeline's build
 * meets a previous tree written hours before, long since on disk.
 */
const settle = () => void spawnSync('sync');

function child<T>(script: string, ...args: string[]): T {
  return childOn<T>({ path: process.execPath, options: [] }, script, ...args);
}

function childOn<T>(node: Pick<NodeLine, 'path' | 'options'>, script: string, ...args: string[]): T {
  settle();
  const r = spawnSync(node.path, [...node.options, join(here, script), ...args], { encoding: 'utf8', maxBuffer: 1 << 24 });
  if (r.status !== 0) throw new Error(`${script} failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as T;
}

type Build = { ms: number; maxRssMb: number; timings: Record<string, number>; parsed: number; pages: number };
/** One build (build-once.ts) in a process of its own, under `node` (this process's by default) as the command runs it there. */
const buildOnce = (args: string[], node: NodeLine = nodeLines[0]!) => childOn<Build>(node, 'build-once.js', ...args);

/**
 * A folder each of whose subfolders ext4 places in a block group of its own (the `T` attribute: Orlov's top of a
 * hierarchy), where the file system allows it. Without a journal, as on this project's machines, ext4 skips every
 * inode freed in the last minute (six while its table block is dirty) when it allocates one, checking each in turn,
 * so creating a tree where one was just removed costs many times what it costs in a fresh group. The bench
 * removes and copies trees between runs, while the pipeline's build meets a folder whose last removal is hours old;
 * each timed build writes into a fresh subfolder of this one, so it is billed for its own work, removing the tree
 * it replaces included, and not for the bench's. Returns whether the attribute took.
 */
function spreadFolder(dir: string): boolean {
  mkdirSync(dir, { recursive: true });
  return spawnSync('chattr', ['+T', dir], { stdio: 'ignore' }).status === 0;
}

/** A process's resident set (Linux), in MB. */
function rssMb(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) / 1024;
}

/** The bytes the Node server holds in memory for a tree: every file but the ledgers, with its variants. */
function hotMb(out: string): number {
  const m = JSON.parse(readFileSync(join(out, 'v1', '_manifest.json'), 'utf8')) as {
    files: Record<string, { size: number; encodings?: Record<string, { size: number }> }>;
  };
  let bytes = 0;
  for (const [path, e] of Object.entries(m.files))
    if (!isLedger(path)) bytes += e.size + Object.values(e.encodings ?? {}).reduce((n, v) => n + v.size, 0);
  return bytes / 2 ** 20;
}

/** REDIS_URL (or the local default) where a Redis answers there, else undefined. */
async function answeringRedis(url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'): Promise<string | undefined> {
  const probe = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 1_000,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  probe.on('error', () => {});
  const ok = await probe
    .connect()
    .then(() => probe.ping())
    .then(
      () => true,
      () => false,
    );
  probe.disconnect();
  return ok ? url : undefined;
}

if (only !== 'build') checkWrk();
const at = placement(!process.argv.includes('--no-pin'));
const work = mkdtempSync(join(tmpdir(), 'rr-bench-'));
try {
  let table: string;
  if (only === 'paid') {
    const results = await measurePaid(work);
    writeResults(results);
    table = [header(results), '', ...paidTable(results.paid)].join('\n');
  } else if (only === 'build') {
    const { results } = await measureBuild(work);
    writeResults(results);
    table = [header(results), ...buildTable(results)].join('\n');
  } else {
    const results = await measure(work);
    writeResults(results);
    table = report(results);
  }
  process.stdout.write(table + `\nwritten to ${outFile}\n`);
} finally {
  rmSync(work, { recursive: true, force: true });
}

function writeResults(results: object): void {
  mkdirSync(dirname(outFile), { recursive: true });
  writeFileSync(outFile, JSON.stringify(results, null, 2) + '\n');
}

/** The machine the figures were taken on; `load1` is the one-minute load average when the bench started. */
function machineOf(load1: number) {
  return {
    cpus: cpus().length,
    model: cpus()[0]?.model ?? '',
    memory_gb: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    /** The one-minute load average when the bench started and when it ended: how busy the machine was. */
    load_average: [load1, loadavg()[0]!],
    /** The core the servers ran on and wrk's, when pinned. */
    pinned: at,
  };
}

/** `--only paid`: one build of the site, then the paid paths against the reference. */
async function measurePaid(work: string) {
  const load1 = loadavg()[0]!;
  const site = join(work, 'site');
  await writeSite({ out: site, day: 1, assets, catalog: loadCatalog() });
  const out = join(work, 'tree');
  buildOnce([site, out, join(site, 'catalog.json')]);
  const paid = await paidPaths({ work, tree: out, seconds, connections, rounds, warm, redisUrl: await answeringRedis(), at });
  return { date: new Date().toISOString().slice(0, 10), machine: machineOf(load1), paid };
}

/** The builds: the site's against its floor, day 2, the rebuild, and the site at `scale` times on every Node line. */
async function measureBuild(work: string) {
  const site = join(work, 'site');
  const trees = join(work, 'trees');
  const load1 = loadavg()[0]!;
  const spread = spreadFolder(trees);
  if (!spread) process.stderr.write(`bench: ${trees} takes no ext4 'T' attribute: build times include the file system's own history\n`);
  const catalog = loadCatalog();
  const written = await writeSite({ out: site, day: 1, assets, catalog });
  const siteCatalog = join(site, 'catalog.json');
  process.stderr.write(`bench: ${written.files.length} pages for ${written.assets.length} assets in ${work}\n`);

  // Build: floor and full build alternate, best of each; then rebuilds where no page changed.
  type Floor = { ms: number; pages: number; bytes: number };
  const floors: Floor[] = [];
  const fulls: Build[] = [];
  // Each build into an empty folder of its own; the last one serves as day 1's tree and the shim's.
  let out = '';
  for (let i = 0; i < repeats; i++) {
    floors.push(child<Floor>('floor.js', site));
    out = join(trees, `full-${i}`);
    fulls.push(buildOnce([site, out, siteCatalog]));
  }
  const rebuilds = Array.from({ length: repeats }, () => buildOnce([site, out, siteCatalog]));
  // The pipeline's normal case: day 2's pages over day 1's tree (every page changed, every ledger continues),
  // against the floor of day 2's pages, alternating.
  const site2 = join(work, 'site-day2');
  await writeSite({ out: site2, day: 2, assets, catalog });
  const floors2: Floor[] = [];
  const days2: Build[] = [];
  for (let i = 0; i < repeats; i++) {
    floors2.push(child<Floor>('floor.js', site2));
    const out2 = join(trees, `day2-${i}`);
    cpSync(out, out2, { recursive: true, verbatimSymlinks: true });
    days2.push(buildOnce([site2, out2, siteCatalog, '2026-10-15T00:30:00Z']));
  }
  const floor2 = floors2.reduce((a, b) => (a.ms < b.ms ? a : b));
  const day2 = days2.reduce((a, b) => (a.ms < b.ms ? a : b));
  if (day2.parsed === 0) throw new Error('the day-2 build parsed no page: the site did not change');
  const floor = floors.reduce((a, b) => (a.ms < b.ms ? a : b));
  const full = fulls.reduce((a, b) => (a.ms < b.ms ? a : b));
  const rebuild = rebuilds.reduce((a, b) => (a.ms < b.ms ? a : b));
  if (rebuild.parsed !== 0) throw new Error('the rebuild parsed pages: the site changed between builds');
  // Beside the best of each side, each round's own ratio (a build over the floor run just before it): the machine's
  // speed moves within a run, and a short fast spell lands on a floor more easily than on a build twice as long.
  const roundRatios = (builds: Build[], floorsOf: Floor[]) => builds.map((b, i) => b.ms / floorsOf[i]!.ms);
  const mb = floor.bytes / 1e6;

  // The site at `scale` times the assets (copies of each under new symbols, with a catalogue to match): its full
  // build alternates with the site's own, so time per page at both sizes is taken in the same spell of the machine;
  // on every Node line in turn, each round, so that each line's peak RSS at both sizes is its own.
  type Line = { line: NodeLine; builds: Build[]; base: Build[] };
  let scaled: { assets: number; pages: number; megabytes: number; lines: Line[] } | null = null;
  if (scale > 1) {
    const big = join(work, 'site-scaled');
    const bigWritten = await writeSite({
      out: big,
      day: 1,
      catalog: scaledCatalog(catalog, scale),
      symbols: scaledSymbols(written.assets, scale),
    });
    const bigFloor = child<Floor>('floor.js', big);
    const lines: Line[] = nodeLines.map((line) => ({ line, builds: [], base: [] }));
    for (let i = 0; i < repeats; i++)
      for (const [n, { line, base, builds }] of lines.entries()) {
        base.push(buildOnce([site, join(trees, `base-${n}-${i}`), siteCatalog], line));
        builds.push(buildOnce([big, join(trees, `scaled-${n}-${i}`), join(big, 'catalog.json')], line));
      }
    scaled = {
      assets: bigWritten.assets.length,
      pages: bigFloor.pages,
      megabytes: Number((bigFloor.bytes / 1e6).toFixed(1)),
      lines,
    };
  }
  const perPage = (b: Build) => b.ms / b.pages;
  const peak = (bs: Build[]) => Math.max(...bs.map((b) => b.maxRssMb));
  const best = (bs: Build[]) => Math.min(...bs.map((b) => b.ms)) / 1000;
  const main = scaled?.lines[0];
  const build = {
    floor_s: floor.ms / 1000,
    full_s: full.ms / 1000,
    ratio_full_to_floor: full.ms / floor.ms,
    round_ratios_full: roundRatios(fulls, floors),
    goal_ratio: 3,
    pages_per_s: floor.pages / (full.ms / 1000),
    mb_per_s: mb / (full.ms / 1000),
    peak_rss_mb: Math.max(...fulls.map((f) => f.maxRssMb), ...days2.map((d) => d.maxRssMb)),
    goal_rss_mb: 512,
    day2_floor_s: floor2.ms / 1000,
    day2_s: day2.ms / 1000,
    ratio_day2_to_floor: day2.ms / floor2.ms,
    round_ratios_day2: roundRatios(days2, floors2),
    goal_day2_ratio: 2,
    day2_stages_ms: day2.timings,
    peak_rss_mb_day2: Math.max(...days2.map((d) => d.maxRssMb)),
    rebuild_unchanged_s: rebuild.ms / 1000,
    ratio_rebuild_to_full: rebuild.ms / full.ms,
    goal_rebuild_ratio: 0.25,
    full_stages_ms: full.timings,
    rebuild_stages_ms: rebuild.timings,
    scaled: scaled &&
      main && {
        times: scale,
        assets: scaled.assets,
        pages: scaled.pages,
        megabytes: scaled.megabytes,
        full_s: main.builds.map((b) => b.ms / 1000),
        peak_rss_mb: peak(main.builds),
        goal_rss_mb: 512,
        ms_per_page: main.builds.map(perPage),
        base_ms_per_page: main.base.map(perPage),
        base_peak_rss_mb: peak(main.base),
        /** Each round's time per page at scale over the site's own, built just before. */
        round_ratios_per_page: main.builds.map((b, i) => perPage(b) / perPage(main.base[i]!)),
        /** Each Node line's full builds at both sizes (best time of the rounds, highest peak RSS), this process's first. */
        node_lines: scaled.lines.map(({ line, base, builds }) => ({
          node: line.version,
          options: line.options,
          base_full_s: best(base),
          base_peak_rss_mb: peak(base),
          full_s: best(builds),
          peak_rss_mb: peak(builds),
        })),
      },
  };
  const results = {
    date: new Date().toISOString().slice(0, 10),
    machine: machineOf(load1),
    site: { assets: written.assets.length, pages: floor.pages, megabytes: Number(mb.toFixed(1)) },
    /** Whether each timed build wrote into a block group of its own (spreadFolder). */
    output_in_fresh_block_groups: spread,
    build,
  };
  return { results, load1, catalog, written, out };
}

async function measure(work: string) {
  const { results: built, load1, catalog, written, out } = await measureBuild(work);

  // Shim: each load of it side by side with bare Node on one core (paid.ts says why); the other loads alone.
  const servers = new Map<string, Running>();
  for (const kind of ['shim', 'shim-quiet', 'bare', 'static'])
    servers.set(kind, await startBenchServer(kind, out, KEYS, join(work, `${kind}.log`), at));
  const server = (kind: string) => servers.get(kind)!;
  // Memory after start-up, before any load: the shim holding the whole tree's hot files against bare Node.
  const rss = { shim_mb: rssMb(server('shim').pid), bare_mb: rssMb(server('bare').pid) };
  const full365 = JSON.parse(readFileSync(join(out, 'v1/assets/BTC/history/full.json'), 'utf8')).data.rows as { date: string }[];
  const from = full365[Math.floor(full365.length / 2)]!.date;
  const bulk = catalog
    .filter((a) => written.assets.some((w) => w.symbol === a.symbol))
    .slice(0, 25)
    .map((a) => a.symbol)
    .join(',');
  const target = (kind: string, path: string, headers: Record<string, string> = AUTH): Target => ({
    url: server(kind).url + path,
    headers,
    connections,
  });
  const risk = '/v1/assets/BTC/risk';
  const loadOf = (kind: string, path: string, headers?: Record<string, string>) =>
    loadServer(server(kind), target(kind, path, headers), seconds, at);
  // Warm the servers' JIT (the quiet shim's too: measured once, it would otherwise be measured cold).
  const warmed = Math.max(20_000, warm);
  // All at once, each by a wrk of its own: none waits idle through another's warm-up before the loads side by side.
  await warmServersTogether(
    [
      [server('shim'), target('shim', risk)],
      [server('shim-quiet'), target('shim-quiet', risk)],
      [server('bare'), target('bare', '/', {})],
    ],
    warmed,
    at,
  );
  // Each shim side by side with bare Node on one core, as the paid paths are measured (paid.ts).
  const bareLoads: Load[] = [];
  const beside = async (kind: string) => {
    const [l, bare] = await loadServersTogether(
      [
        [server(kind), target(kind, risk)],
        [server('bare'), target('bare', '/', {})],
      ],
      seconds,
      at,
    );
    bareLoads.push(bare!);
    return { load: l!, ratio: l!.rps / bare!.rps, valid: sharedFairly(l!, bare!) };
  };
  const riskRatios: { load: Load; ratio: number; valid: boolean }[] = [];
  const quietRatios: typeof riskRatios = [];
  for (let i = 0; i < 2; i++) {
    riskRatios.push(await beside('shim'));
    quietRatios.push(await beside('shim-quiet'));
  }
  const loads = {
    bare_node_same_bytes: bareLoads,
    shim_risk: riskRatios.map((r) => r.load),
    shim_risk_log_silent: quietRatios.map((r) => r.load),
    serve_handler_same_file: [loadOf('static', '/v1/assets/BTC/risk.json', {})],
    shim_history_cut: [loadOf('shim', `/v1/assets/BTC/history?limit=50&from=${from}`)],
    shim_bulk_25: [loadOf('shim', `/v1/bulk/risk?symbols=${bulk}`)],
  };

  // Compression (decision 23): the same requests plain and with `Accept-Encoding: br, gzip`, one after the other.
  const BR = { ...AUTH, 'Accept-Encoding': 'br, gzip' };
  const compressed: Record<string, { plain: Load; br_gzip: Load; bytes_saved: number; rps_ratio: number }> = {};
  for (const [name, path] of [
    ['asset_list_ultra', '/v1/assets'],
    ['risk', risk],
    ['history_page_365', '/v1/assets/BTC/history?limit=365'],
    ['history_cut_on_the_fly', `/v1/assets/BTC/history?limit=50&from=${from}`],
  ] as const) {
    const plain = loadOf('shim', path);
    const br = loadOf('shim', path, BR);
    compressed[name] = {
      plain,
      br_gzip: br,
      bytes_saved: 1 - br.bytes_per_response / plain.bytes_per_response,
      rps_ratio: br.rps / plain.rps,
    };
  }
  for (const s of servers.values()) s.stop();

  const paid = await paidPaths({ work, tree: out, seconds, connections, rounds, warm, redisUrl: await answeringRedis(), at });

  const ratioSummary = (rs: { ratio: number; valid: boolean }[]) => ({
    rounds: rs.map((r) => r.ratio),
    valid: rs.map((r) => r.valid),
    median: median(rs.filter((r) => r.valid).map((r) => r.ratio)),
  });
  const results = {
    ...built,
    machine: machineOf(load1),
    shim: {
      seconds,
      connections,
      loads,
      ratio_shim_to_bare: ratioSummary(riskRatios),
      ratio_shim_silent_to_bare: ratioSummary(quietRatios),
      compression: compressed,
    },
    paid: {
      ...paid,
      rss_after_start: { ...rss, ratio: rss.shim_mb / rss.bare_mb, goal_ratio: 2, tree_hot_mb: hotMb(out) },
    },
  };
  return results;
}

type Results = Awaited<ReturnType<typeof measure>>;

/** The table's first line: when, on what, how busy, and where the processes ran. */
function header(r: { date: string; machine: ReturnType<typeof machineOf> }): string {
  return (
    `risk-readings bench ${r.date} · ${r.machine.cpus} × ${r.machine.model} · ${r.machine.node} · load average ${r.machine.load_average.map((x) => x.toFixed(1)).join(' → ')}` +
    (r.machine.pinned.server === undefined
      ? ' · not pinned'
      : ` · servers on core ${r.machine.pinned.server}, wrk on ${r.machine.pinned.wrk}`)
  );
}

/** The build's part of the table. */
function buildTable(r: Awaited<ReturnType<typeof measureBuild>>['results']): string[] {
  const f = fixed;
  const b = r.build;
  const lines = [
    `site: ${r.site.assets} assets, ${r.site.pages} pages, ${r.site.megabytes} MB` +
      (r.output_in_fresh_block_groups ? '' : ' · outputs not in fresh block groups (see spreadFolder)'),
    '',
    'build                          value        goal',
    `floor (read + JSON.parse)      ${f(b.floor_s)} s`,
    `full build                     ${f(b.full_s)} s`,
    `  ratio to floor               ${f(b.ratio_full_to_floor)}         <= ${b.goal_ratio}   ${verdict(b.ratio_full_to_floor <= b.goal_ratio)}`,
    `  each round's ratio           ${b.round_ratios_full.map((x) => f(x)).join(', ')} (median ${f(median(b.round_ratios_full))})`,
    `  pages/s, MB/s                ${f(b.pages_per_s, 0)}, ${f(b.mb_per_s, 1)}`,
    `  peak RSS                     ${f(b.peak_rss_mb, 0)} MB       < ${b.goal_rss_mb} MB ${verdict(b.peak_rss_mb < b.goal_rss_mb)}`,
    `day 2 over day 1 (floor ${f(b.day2_floor_s)} s)   ${f(b.day2_s)} s`,
    `  ratio to its floor           ${f(b.ratio_day2_to_floor)}         <= ${b.goal_day2_ratio}  ${verdict(b.ratio_day2_to_floor <= b.goal_day2_ratio)}`,
    `  each round's ratio           ${b.round_ratios_day2.map((x) => f(x)).join(', ')} (median ${f(median(b.round_ratios_day2))})`,
    `rebuild, no page changed       ${f(b.rebuild_unchanged_s)} s`,
    `  ratio to full build          ${f(b.ratio_rebuild_to_full)}         <= ${b.goal_rebuild_ratio}  ${verdict(b.ratio_rebuild_to_full <= b.goal_rebuild_ratio)}`,
  ];
  const s = r.build.scaled;
  if (s)
    lines.push(
      `${s.times}x the site: ${s.assets} assets, ${s.pages} pages, ${s.megabytes} MB`,
      `  full build                   ${s.full_s.map((x) => f(x)).join(', ')} s`,
      `  ms per page, 1x → ${s.times}x        ${s.base_ms_per_page.map((x) => f(x)).join(', ')} → ${s.ms_per_page.map((x) => f(x)).join(', ')} (each round's ratio ${s.round_ratios_per_page.map((x) => f(x)).join(', ')})`,
      `  peak RSS, 1x → ${s.times}x           ${f(s.base_peak_rss_mb, 0)} → ${f(s.peak_rss_mb, 0)} MB   < ${s.goal_rss_mb} MB ${verdict(s.peak_rss_mb < s.goal_rss_mb)}`,
      `  by Node line: full build 1x, ${s.times}x (best of ${s.full_s.length}); peak RSS 1x → ${s.times}x (highest)`,
      ...s.node_lines.map(
        (l) =>
          `    ${`${l.node} ${l.options.join(' ')}`.padEnd(38)} ${f(l.base_full_s)}, ${f(l.full_s)} s   ${f(l.base_peak_rss_mb, 0)} → ${f(l.peak_rss_mb, 0)} MB   < ${s.goal_rss_mb} MB ${verdict(l.peak_rss_mb < s.goal_rss_mb)}`,
      ),
    );
  return lines;
}

/** The table printed at the end: every ratio with its rounds, and each baseline's CPU beside it. */
function report(r: Results): string {
  const f = fixed;
  const lines = [header(r), ...buildTable(r)];
  const sh = r.shim;
  const ratioLine = (name: string, x: { rounds: number[]; valid: boolean[]; median: number | null }) =>
    `  ${name.padEnd(28)} ${x.rounds.map((v, i) => f(v) + (x.valid[i] ? '' : '!')).join(', ')} (median of valid rounds ${f(x.median)})`;
  lines.push(
    '',
    `shim, one fixed key (${sh.seconds} s each, ${sh.connections} connections)   req/s  p50 ms  p99 ms    CPU  µs/req   wrk  HTTP>=400`,
    ...Object.entries(sh.loads).flatMap(([k, ls]) =>
      ls.map((l, i) => loadLine(`${k}${ls.length > 1 ? ` #${i + 1}` : ''}`, l, SIDE_BY_SIDE.has(k) ? HALF_CORE : FULL_CORE)),
    ),
    ratioLine('shim / bare', sh.ratio_shim_to_bare),
    ratioLine('shim (log silent) / bare', sh.ratio_shim_silent_to_bare),
    '',
    'compression: plain vs br, gzip    bytes/response        bytes saved   req/s plain → br   ratio',
    ...Object.entries(sh.compression).map(
      ([k, c]) =>
        `${k.padEnd(32)} ${String(c.plain.bytes_per_response).padStart(7)} → ${String(c.br_gzip.bytes_per_response).padEnd(7)}  ${(100 * c.bytes_saved).toFixed(0).padStart(5)} %     ${f(c.plain.rps, 0).padStart(6)} → ${f(c.br_gzip.rps, 0).padEnd(6)}   ${f(c.rps_ratio)}`,
    ),
  );
  const p = r.paid;
  lines.push('', ...paidTable(p));
  lines.push(
    `RSS after start-up: shim ${f(p.rss_after_start.shim_mb, 0)} MB (tree's hot files ${f(p.rss_after_start.tree_hot_mb, 1)} MB), bare ${f(p.rss_after_start.bare_mb, 0)} MB: ${f(p.rss_after_start.ratio)}x  <= 2  ${verdict(p.rss_after_start.ratio <= 2)}`,
  );
  return lines.join('\n');
}
