/** Smoke test of `npm run bench` on a tiny site: it runs end to end and writes every figure. No timing is asserted. */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, readJson, tempDir } from '../helpers.js';

describe('bench', () => {
  it('runs on a tiny site and writes the table as JSON', () => {
    const out = join(tempDir('rr-bench-'), 'results.json');
    const r = spawnSync(
      process.execPath,
      [join(ROOT, 'dist', 'bench', 'run.js'), '--assets', '4', '--seconds', '1', '--repeats', '1', '--connections', '2', '--out', out],
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
    for (const k of [
      'shim_risk',
      'shim_risk_log_silent',
      'bare_node_same_bytes',
      'serve_handler_same_file',
      'shim_history_cut',
      'shim_bulk_25',
    ]) {
      expect(res.shim[k].requests, k).toBeGreaterThan(0);
      expect(res.shim[k].non2xx, k).toBe(0);
    }
    expect(typeof res.shim.ratio_shim_to_bare).toBe('number');
    // Compression measured on the same requests plain and with Accept-Encoding: br, gzip.
    for (const k of ['asset_list_ultra', 'risk', 'history_page_365', 'history_cut_on_the_fly']) {
      expect(res.shim.compression[k].br_gzip.non2xx, k).toBe(0);
      expect(res.shim.compression[k].br_gzip.requests, k).toBeGreaterThan(0);
    }
    expect(res.shim.compression.history_page_365.bytes_saved).toBeGreaterThan(0.5);
    expect(res.shim.compression.history_cut_on_the_fly.bytes_saved).toBeGreaterThan(0.5);
    // The paying callers' paths, counted for real on every store this machine has (Redis here and in CI).
    for (const k of [
      'direct_key_memory',
      'marketplace_memory',
      'direct_key_disk',
      'marketplace_disk',
      'direct_key_redis',
      'marketplace_redis',
    ]) {
      expect(res.paid[k].requests, k).toBeGreaterThan(0);
      expect(res.paid[k].non2xx, k).toBe(0);
      expect(typeof res.paid.ratios_to_bare[k], k).toBe('number');
      expect(typeof res.paid.p99_within_2x_of_bare[k], k).toBe('boolean');
    }
    // The refusal path: keys past their minute, every request after each key's first five a 429.
    for (const k of ['refused_429_memory', 'refused_429_disk', 'refused_429_redis']) {
      expect(res.paid[k].non2xx, k).toBeGreaterThan(res.paid[k].requests / 2);
      expect(typeof res.paid.ratios_to_bare[k], k).toBe('number');
    }
    const rss = res.paid.rss_after_start;
    expect([rss.shim_mb, rss.bare_mb, rss.tree_hot_mb].every((v: number) => v > 0)).toBe(true);
  });
});
