/**
 * `npm run bench`: the build against its floor, and the shim against a bare Node server, each measured as a
 * ratio in the same run (these machines are noisy; absolute times are not what the project promises).
 * Options: --assets N (default all), --seconds S per load (default 5), --connections C (default 10),
 * --repeats R builds (default 2), --out FILE (default bench/results.json).
 */
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { loadCatalog } from '../generator/catalog/catalog.js';
import { isLedger } from '../generator/contract/tree.js';
import { sha256 } from '../generator/output/manifest.js';
import { MARKETPLACE } from './marketplace.js';
import { writeSite } from '../fixtures/synth/site.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : fallback;
};
const assets = Number(arg('assets', '0')) || undefined;
const seconds = arg('seconds', '5');
const connections = arg('connections', '10');
const repeats = Number(arg('repeats', '2'));
const outFile = arg('out', join(root, 'bench', 'results.json'));
const KEYS = join(root, 'fixtures', 'keys', 'example-keys.json');
const AUTH = { 'X-API-Key': 'rr_demo_ultra_key_not_secret' };

/**
 * Flushes the page cache's dirty pages before a timed run: the setup's copies and deletions (a 50 MB tree) would
 * otherwise be written back during the next measurement and bill it for the setup's I/O. The pipeline's build
 * meets a previous tree written hours before, long since on disk.
 */
const settle = () => void spawnSync('sync');

function child<T>(script: string, ...args: string[]): T {
  settle();
  const r = spawnSync(process.execPath, [join(here, script), ...args], { encoding: 'utf8', maxBuffer: 1 << 24 });
  if (r.status !== 0) throw new Error(`${script} failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as T;
}

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

const work = mkdtempSync(join(tmpdir(), 'rr-bench-'));
const site = join(work, 'site');
const trees = join(work, 'trees');
try {
  const spread = spreadFolder(trees);
  if (!spread) process.stderr.write(`bench: ${trees} takes no ext4 'T' attribute: build times include the file system's own history\n`);
  const catalog = loadCatalog();
  const written = await writeSite({ out: site, day: 1, assets, catalog });
  const siteCatalog = join(site, 'catalog.json');
  process.stderr.write(`bench: ${written.files.length} pages for ${written.assets.length} assets in ${work}\n`);

  // Build: floor and full build alternate, best of each; then rebuilds where no page changed.
  type Floor = { ms: number; pages: number; bytes: number };
  type Build = { ms: number; maxRssMb: number; timings: Record<string, number>; parsed: number };
  const floors: Floor[] = [];
  const fulls: Build[] = [];
  // Each build into an empty folder of its own; the last one serves as day 1's tree and the shim's.
  let out = '';
  for (let i = 0; i < repeats; i++) {
    floors.push(child<Floor>('floor.js', site));
    out = join(trees, `full-${i}`);
    fulls.push(child<Build>('build-once.js', site, out, siteCatalog));
  }
  const rebuilds = Array.from({ length: repeats }, () => child<Build>('build-once.js', site, out, siteCatalog));
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
    days2.push(child<Build>('build-once.js', site2, out2, siteCatalog, '2026-10-15T00:30:00Z'));
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
  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    const mid = s.length >> 1;
    return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
  };
  const mb = floor.bytes / 1e6;

  // Shim: four servers, loaded one at a time from a separate autocannon process.
  const servers = await Promise.all(
    ['shim', 'shim-quiet', 'bare', 'static'].map(
      (kind) =>
        new Promise<{ kind: string; url: string; kill: () => void; pid: number }>((resolve, reject) => {
          const p = spawn(process.execPath, [join(here, 'server.js'), kind, out, KEYS], { stdio: ['ignore', 'pipe', 'inherit'] });
          p.stdout.once('data', (d: Buffer) => resolve({ kind, url: d.toString().trim(), kill: () => p.kill(), pid: p.pid! }));
          p.once('error', reject);
        }),
    ),
  );
  const url = (kind: string) => servers.find((s) => s.kind === kind)!.url;
  // Memory after start-up, before any load: the shim holding the whole tree's hot files against bare Node.
  const pidOf = (kind: string) => servers.find((s) => s.kind === kind)!.pid;
  const rss = { shim_mb: rssMb(pidOf('shim')), bare_mb: rssMb(pidOf('bare')) };
  const full365 = JSON.parse(readFileSync(join(out, 'v1/assets/BTC/history/full.json'), 'utf8')).data.rows as { date: string }[];
  const from = full365[Math.floor(full365.length / 2)]!.date;
  const bulk = catalog
    .filter((a) => written.assets.some((w) => w.symbol === a.symbol))
    .slice(0, 25)
    .map((a) => a.symbol)
    .join(',');
  type Load = { rps: number; p50: number; p99: number; requests: number; non2xx: number; errors: number; bytes_per_response: number };
  const load = (target: string, headers: Record<string, string> = {}) =>
    child<Load>('load.js', target, JSON.stringify(headers), seconds, connections);
  // Warm the servers' JIT (the quiet shim's too: measured once, it would otherwise be measured cold), then two
  // alternating rounds of the pair that makes the ratio; the better of each.
  for (const kind of ['shim', 'shim-quiet'])
    child<Load>('load.js', `${url(kind)}/v1/assets/BTC/risk`, JSON.stringify(AUTH), '1', connections);
  child<Load>('load.js', `${url('bare')}/`, '{}', '1', connections);
  const best = (a: Load, b: Load) => (a.rps >= b.rps ? a : b);
  let shimRisk = load(`${url('shim')}/v1/assets/BTC/risk`, AUTH);
  let bare = load(`${url('bare')}/`);
  shimRisk = best(shimRisk, load(`${url('shim')}/v1/assets/BTC/risk`, AUTH));
  bare = best(bare, load(`${url('bare')}/`));
  const loads = {
    shim_risk: shimRisk,
    bare_node_same_bytes: bare,
    shim_risk_log_silent: load(`${url('shim-quiet')}/v1/assets/BTC/risk`, AUTH),
    serve_handler_same_file: load(`${url('static')}/v1/assets/BTC/risk.json`),
    shim_history_cut: load(`${url('shim')}/v1/assets/BTC/history?limit=50&from=${from}`, AUTH),
    shim_bulk_25: load(`${url('shim')}/v1/bulk/risk?symbols=${bulk}`, AUTH),
  };

  // Compression (decision 23): the same requests plain and with `Accept-Encoding: br, gzip`, one after the other.
  const BR = { ...AUTH, 'Accept-Encoding': 'br, gzip' };
  const compressed: Record<string, { plain: Load; br_gzip: Load; bytes_saved: number; rps_ratio: number }> = {};
  for (const [name, path] of [
    ['asset_list_ultra', '/v1/assets'],
    ['risk', '/v1/assets/BTC/risk'],
    ['history_page_365', '/v1/assets/BTC/history?limit=365'],
    ['history_cut_on_the_fly', `/v1/assets/BTC/history?limit=50&from=${from}`],
  ] as const) {
    const plain = load(`${url('shim')}${path}`, AUTH);
    const br = load(`${url('shim')}${path}`, BR);
    compressed[name] = {
      plain,
      br_gzip: br,
      bytes_saved: 1 - br.bytes_per_response / plain.bytes_per_response,
      rps_ratio: br.rps / plain.rps,
    };
  }

  // Paying callers' paths on the real clock: 20,000 direct keys in rotation, each request counted in the store
  // (no key meets its limit), and the marketplace's proxy-secret path with 1,000 subscriber keys in rotation.
  const keyFile = join(work, 'bench-keys.json');
  const direct = Array.from({ length: 20_000 }, (_, i) => `rr_bench_${i.toString(36).padStart(6, '0')}`);
  // Basic keys past their 5 requests a minute: after each key's first five, every request is a 429 refusal.
  const limited = Array.from({ length: 100 }, (_, i) => `rr_bench_basic_${i}`);
  const record = (k: string, plan: string) => ({ sha256: sha256(k), plan, label: 'bench' });
  writeFileSync(keyFile, JSON.stringify({ keys: [...direct.map((k) => record(k, 'ultra')), ...limited.map((k) => record(k, 'basic'))] }));
  const rotation = (name: string, header: string, values: string[]) => {
    const f = join(work, `${name}.json`);
    writeFileSync(f, JSON.stringify({ header, values }));
    return f;
  };
  const directKeys = rotation('direct', 'X-API-Key', direct);
  const refusedKeys = rotation('limited', 'X-API-Key', limited);
  const subscribers = rotation(
    'subscribers',
    'X-RapidAPI-Key',
    Array.from({ length: 1_000 }, (_, i) => `subscriber_${i}`),
  );
  const market = { 'X-RapidAPI-Host': MARKETPLACE.host, 'X-RapidAPI-Proxy-Secret': MARKETPLACE.secret, 'X-RapidAPI-Subscription': 'ULTRA' };
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const probe = new Redis(redisUrl, {
    lazyConnect: true,
    connectTimeout: 1_000,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  probe.on('error', () => {});
  const haveRedis = await probe
    .connect()
    .then(() => probe.ping())
    .then(
      () => true,
      () => false,
    );
  probe.disconnect();
  const stores = ['memory', 'disk', ...(haveRedis ? ['redis'] : [])];
  const paid = await Promise.all(
    stores.map(
      (store) =>
        new Promise<{ store: string; url: string; kill: () => void; pid: number }>((resolve, reject) => {
          const p = spawn(process.execPath, [join(here, 'server.js'), `paid-${store}`, out, keyFile], {
            stdio: ['ignore', 'pipe', 'inherit'],
          });
          p.stdout.once('data', (d: Buffer) => resolve({ store, url: d.toString().trim(), kill: () => p.kill(), pid: p.pid! }));
          p.once('error', reject);
        }),
    ),
  );
  const loadRotating = (target: string, headers: Record<string, string>, file: string) =>
    child<Load>('load.js', target, JSON.stringify(headers), seconds, connections, file);
  // Bare Node is loaded the same way (the same rotating headers, which the load generator pays for too), so each
  // ratio compares the servers and not the load: the better of two rounds, one before and one after.
  const bareDirect = () => loadRotating(`${url('bare')}/`, {}, directKeys);
  const bareMarket = () => loadRotating(`${url('bare')}/`, market, subscribers);
  let bareLoads = { direct: bareDirect(), marketplace: bareMarket() };
  const paidLoads: Record<string, Load> = {};
  for (const { store, url: base } of paid) {
    // Every key once first, as a running server has seen its customers' keys: the figure is the steady state.
    child<Load>('load.js', `${base}/v1/assets/BTC/risk`, '{}', `n${direct.length}`, connections, directKeys);
    paidLoads[`direct_key_${store}`] = loadRotating(`${base}/v1/assets/BTC/risk`, {}, directKeys);
    paidLoads[`marketplace_${store}`] = loadRotating(`${base}/v1/assets/BTC/risk`, market, subscribers);
    paidLoads[`refused_429_${store}`] = loadRotating(`${base}/v1/assets/BTC/risk`, {}, refusedKeys);
  }
  bareLoads = { direct: best(bareLoads.direct, bareDirect()), marketplace: best(bareLoads.marketplace, bareMarket()) };
  for (const s of [...servers, ...paid]) s.kill();
  const bareFor = (k: string) => (k.startsWith('marketplace') ? bareLoads.marketplace : bareLoads.direct);
  const paidRatios = Object.fromEntries(Object.entries(paidLoads).map(([k, l]) => [k, l.rps / bareFor(k).rps]));
  // autocannon's latencies are whole milliseconds: within 2x of bare's p99, or 1 ms where bare's rounds to 0.
  const p99Met = (k: string) => paidLoads[k]!.p99 <= Math.max(1, 2 * bareFor(k).p99);

  const results = {
    date: new Date().toISOString().slice(0, 10),
    machine: { cpus: cpus().length, model: cpus()[0]?.model ?? '', memory_gb: Math.round(totalmem() / 2 ** 30), node: process.version },
    site: { assets: written.assets.length, pages: floor.pages, megabytes: Number(mb.toFixed(1)) },
    /** Whether each timed build wrote into a block group of its own (spreadFolder). */
    output_in_fresh_block_groups: spread,
    build: {
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
    },
    shim: {
      seconds: Number(seconds),
      connections: Number(connections),
      ...loads,
      ratio_shim_to_bare: loads.shim_risk.rps / loads.bare_node_same_bytes.rps,
      goal_ratio: 0.8,
      compression: compressed,
    },
    paid: {
      direct_keys: direct.length,
      bare_node_same_load: bareLoads,
      ...paidLoads,
      ratios_to_bare: paidRatios,
      goal_ratio: 0.8,
      goal_applies_to: [
        'direct_key_memory',
        'marketplace_memory',
        'refused_429_memory',
        'direct_key_disk',
        'marketplace_disk',
        'refused_429_disk',
      ],
      p99_within_2x_of_bare: Object.fromEntries(Object.keys(paidLoads).map((k) => [k, p99Met(k)])),
      rss_after_start: { ...rss, ratio: rss.shim_mb / rss.bare_mb, goal_ratio: 2, tree_hot_mb: hotMb(out) },
    },
  };
  mkdirSync(dirname(outFile), { recursive: true });
  writeFileSync(outFile, JSON.stringify(results, null, 2) + '\n');

  const f = (x: number, d = 2) => x.toFixed(d);
  const b = results.build;
  const lines = [
    `risk-readings bench ${results.date} · ${results.machine.cpus} × ${results.machine.model} · ${results.machine.node}`,
    `site: ${results.site.assets} assets, ${results.site.pages} pages, ${results.site.megabytes} MB` +
      (spread ? '' : ' · outputs not in fresh block groups (see spreadFolder)'),
    '',
    'build                          value        goal',
    `floor (read + JSON.parse)      ${f(b.floor_s)} s`,
    `full build                     ${f(b.full_s)} s`,
    `  ratio to floor               ${f(b.ratio_full_to_floor)}         <= ${b.goal_ratio}   ${b.ratio_full_to_floor <= b.goal_ratio ? 'met' : 'MISSED'}`,
    `  each round's ratio           ${b.round_ratios_full.map((r) => f(r)).join(', ')} (median ${f(median(b.round_ratios_full))})`,
    `  pages/s, MB/s                ${f(b.pages_per_s, 0)}, ${f(b.mb_per_s, 1)}`,
    `  peak RSS                     ${f(b.peak_rss_mb, 0)} MB       < ${b.goal_rss_mb} MB ${b.peak_rss_mb < b.goal_rss_mb ? 'met' : 'MISSED'}`,
    `day 2 over day 1 (floor ${f(b.day2_floor_s)} s)   ${f(b.day2_s)} s`,
    `  ratio to its floor           ${f(b.ratio_day2_to_floor)}         <= ${b.goal_day2_ratio}  ${b.ratio_day2_to_floor <= b.goal_day2_ratio ? 'met' : 'MISSED'}`,
    `  each round's ratio           ${b.round_ratios_day2.map((r) => f(r)).join(', ')} (median ${f(median(b.round_ratios_day2))})`,
    `rebuild, no page changed       ${f(b.rebuild_unchanged_s)} s`,
    `  ratio to full build          ${f(b.ratio_rebuild_to_full)}         <= ${b.goal_rebuild_ratio}  ${b.ratio_rebuild_to_full <= b.goal_rebuild_ratio ? 'met' : 'MISSED'}`,
    '',
    `shim (${seconds} s each, ${connections} connections)   req/s     p50 ms  p99 ms  non-2xx`,
    ...Object.entries(loads).map(
      ([k, l]) => `${k.padEnd(34)} ${f(l.rps, 0).padStart(7)}  ${String(l.p50).padStart(6)}  ${String(l.p99).padStart(6)}  ${l.non2xx}`,
    ),
    `  shim / bare                      ${f(results.shim.ratio_shim_to_bare)}      >= ${results.shim.goal_ratio}  ${results.shim.ratio_shim_to_bare >= results.shim.goal_ratio ? 'met' : 'MISSED'}`,
    '',
    'compression: plain vs br, gzip    bytes/response        bytes saved   req/s plain → br   ratio',
    ...Object.entries(compressed).map(
      ([k, c]) =>
        `${k.padEnd(32)} ${String(c.plain.bytes_per_response).padStart(7)} → ${String(c.br_gzip.bytes_per_response).padEnd(7)}  ${(100 * c.bytes_saved).toFixed(0).padStart(5)} %     ${f(c.plain.rps, 0).padStart(6)} → ${f(c.br_gzip.rps, 0).padEnd(6)}   ${f(c.rps_ratio)}`,
    ),
    '',
    `paid paths, real counting (${direct.length} keys)   req/s   ratio to bare`,
    ...Object.entries(paidLoads).map(([k, l]) => {
      const r = paidRatios[k]!;
      const judged = results.paid.goal_applies_to.includes(k);
      const verdict = judged ? (r >= 0.8 ? '>= 0.8 met' : '>= 0.8 MISSED') : '(beside)';
      return `${k.padEnd(34)} ${f(l.rps, 0).padStart(7)}  ${f(r).padStart(5)}  ${verdict}  p99 ${l.p99} ms (bare ${bareFor(k).p99}) ${p99Met(k) ? 'met' : 'MISSED'}  non-2xx ${l.non2xx}`;
    }),
    `RSS after start-up: shim ${f(rss.shim_mb, 0)} MB (tree's hot files ${f(results.paid.rss_after_start.tree_hot_mb, 1)} MB), bare ${f(rss.bare_mb, 0)} MB: ${f(results.paid.rss_after_start.ratio)}x  <= 2  ${results.paid.rss_after_start.ratio <= 2 ? 'met' : 'MISSED'}`,
    '',
    `written to ${outFile}`,
  ];
  process.stdout.write(lines.join('\n') + '\n');
} finally {
  rmSync(work, { recursive: true, force: true });
}
