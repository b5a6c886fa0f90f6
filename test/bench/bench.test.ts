/**
 * Smoke test of `npm run bench` on a tiny site: it runs end to end and writes every figure. No timing is asserted.
 * The bench loads its servers with wrk: on a machine without it, this test fails saying how to install it.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { ROOT, readJson, tempDir } from '../helpers.js';
import { REDIS_URL } from '../services.js';

const RUN = join(ROOT, 'dist', 'bench', 'run.js');

async function keysInRedis(): Promise<string[]> {
  const redis = new Redis(REDIS_URL);
  try {
    return await redis.keys('*');
  } finally {
    redis.disconnect();
  }
}

describe('bench', () => {
  it('runs on a tiny site and writes the table as JSON', async () => {
    const out = join(tempDir('rr-bench-'), 'results.json');
    const before = new Set(await keysInRedis());
    const r = spawnSync(
      process.execPath,
      [
        RUN,
        '--assets',
        '4',
        '--scale',
        '2',
        '--seconds',
        '1',
        '--repeats',
        '1',
        '--rounds',
        '1',
        '--connections',
        '4',
        '--warm',
        '0',
        '--out',
        out,
      ],
      { encoding: 'utf8' },
    );
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/ratio to floor/);
    const res = readJson(out);
    for (const k of [
      'floor_s',
      'full_s',
      'ratio_full_to_floor',
      'peak_rss_mb',
      'rebuild_unchanged_s',
      'ratio_rebuild_to_full',
      'day2_s',
      'ratio_day2_to_floor',
    ])
      expect(typeof res.build[k], k).toBe('number');
    // One ratio per round (--repeats 1 here), each a build over the floor run just before it.
    for (const k of ['round_ratios_full', 'round_ratios_day2']) expect(res.build[k], k).toEqual([expect.any(Number)]);
    expect(r.stdout).toMatch(/each round's ratio +[\d.]+ \(median [\d.]+\)/);
    // The site at twice the assets, built beside the site's own: its peak RSS and time per page at both sizes.
    const scaled = res.build.scaled;
    expect(scaled.assets).toBe(2 * res.site.assets);
    expect(scaled.pages).toBeGreaterThan(res.site.pages);
    expect(scaled.peak_rss_mb).toBeGreaterThan(0);
    expect(scaled.ms_per_page).toEqual([expect.any(Number)]);
    expect(scaled.round_ratios_per_page).toEqual([expect.any(Number)]);
    expect(r.stdout).toMatch(/2x the site: 8 assets/);
    // Every load says how busy its server was: the figures a baseline short of a core gives are marked.
    for (const [k, loads] of Object.entries(
      res.shim.loads as Record<string, { requests: number; status_errors: number; server_cpu: number }[]>,
    ))
      for (const l of loads) {
        expect(l.requests, k).toBeGreaterThan(0);
        expect(l.status_errors, k).toBe(0);
        expect(l.server_cpu, k).toBeGreaterThan(0);
      }
    for (const k of ['ratio_shim_to_bare', 'ratio_shim_silent_to_bare']) {
      expect(res.shim[k].rounds, k).toEqual([expect.any(Number), expect.any(Number)]);
      expect(res.shim[k].valid, k).toEqual([expect.any(Boolean), expect.any(Boolean)]);
    }
    // Compression measured on the same requests plain and with Accept-Encoding: br, gzip.
    for (const k of ['asset_list_ultra', 'risk', 'history_page_365', 'history_cut_on_the_fly']) {
      expect(res.shim.compression[k].br_gzip.status_errors, k).toBe(0);
      expect(res.shim.compression[k].br_gzip.requests, k).toBeGreaterThan(0);
    }
    expect(res.shim.compression.history_page_365.bytes_saved).toBeGreaterThan(0.5);
    expect(res.shim.compression.history_cut_on_the_fly.bytes_saved).toBeGreaterThan(0.5);
    // The paying callers' paths, counted for real on every store this machine has (Redis here and in CI), each
    // against the reference loaded beside it, on the same core at the same time.
    for (const k of ['direct_key_memory', 'direct_key_sqlite', 'direct_key_redis', 'marketplace']) {
      const p = res.paid.paths[k];
      expect(p.judged, k).toBe(true);
      expect(p.shim[0].requests, k).toBeGreaterThan(0);
      expect(p.shim[0].status_errors, k).toBe(0);
      expect(p.baseline[0].requests, k).toBeGreaterThan(0);
      // Pinned, the two share one core: together they cannot have had more than it.
      if (res.machine.pinned.server !== undefined) expect(p.baseline[0].server_cpu + p.shim[0].server_cpu, k).toBeLessThanOrEqual(1.1);
      expect(p.ratios, k).toEqual([expect.any(Number)]);
      expect(p.p99_ratios, k).toEqual([expect.any(Number)]);
      expect(p.valid, k).toEqual([expect.any(Boolean)]);
    }
    expect(res.paid.paths.direct_key_redis.reference).toBe('reference-redis');
    expect(res.paid.goal_ratio).toBe(0.85);
    expect(r.stdout).toMatch(/direct_key_memory .*>= 0\.85 (met|MISSED|INVALID)/);
    // The refusal path: keys past their minute, every request after each key's first five a 429, on both sides.
    for (const k of ['refused_429_memory', 'refused_429_sqlite']) {
      const p = res.paid.paths[k];
      expect(p.judged, k).toBe(false);
      expect(p.shim[0].status_errors, k).toBeGreaterThan(p.shim[0].requests / 2);
      expect(p.baseline[0].status_errors, k).toBeGreaterThan(p.baseline[0].requests / 2);
    }
    // The memory path beside Fastify with @fastify/rate-limit doing the same job: every answer a success on both
    // sides, the ratio shown and not judged.
    const fastify = res.paid.paths.memory_vs_fastify;
    expect(fastify.reference).toBe('fastify');
    expect(fastify.judged).toBe(false);
    expect(fastify.shim[0].status_errors + fastify.baseline[0].status_errors).toBe(0);
    expect(fastify.baseline[0].requests).toBeGreaterThan(0);
    expect(fastify.ratios).toEqual([expect.any(Number)]);
    // Two copies of the reference side by side: the resolution of the run's ratios, shown and not judged.
    const twin = res.paid.paths.reference_beside_itself;
    expect(twin.judged).toBe(false);
    expect(twin.shim[0].status_errors + twin.baseline[0].status_errors).toBe(0);
    expect(twin.ratios).toEqual([expect.any(Number)]);
    expect(res.paid.sqlite_p99_to_memory.rounds).toEqual([expect.any(Number)]);
    expect(r.stdout).toMatch(/SQLite p99 \/ memory p99/);
    const rss = res.paid.rss_after_start;
    expect([rss.shim_mb, rss.bare_mb, rss.tree_hot_mb].every((v: number) => v > 0)).toBe(true);
    // The Redis paths counted there, and the run removed every key it wrote (a month's counts live for months).
    const after = await keysInRedis();
    expect(after.filter((k) => !before.has(k))).toEqual([]);
  });
});
