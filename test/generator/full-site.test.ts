/** The whole 161-asset fixture site, built on days 1, 2 and 3: every file validates and the invariants hold on all. */
import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { CATALOG, readJson, sitePages, tempDir } from '../helpers.js';
import { writeSite } from '../../fixtures/synth/site.js';
import { build } from '../../generator/build.js';
import { checkTree } from '../../generator/check.js';
import { compareTrees } from '../../generator/diff/compare.js';
import { diskLoader } from '../../generator/diff/loader.js';
import type { ChangeLedger } from '../../generator/contract/shapes.js';

const root = tempDir('rr-full-');
const out = join(root, 'public');
const reports: Awaited<ReturnType<typeof build>>[] = [];

/** Each day's tree as it was published, for `diff` between consecutive days. */
const published = (day: number) => join(root, `tree${day}`);

beforeAll(async () => {
  for (const day of [1, 2, 3]) {
    await writeSite({ out: join(root, `day${day}`), day, catalog: CATALOG });
    reports.push(await build({ pages: join(root, `day${day}`), out, now: `2026-10-${13 + day}T00:30:00Z`, init: day === 1 }));
    cpSync(join(out, 'v1'), join(published(day), 'v1'), { recursive: true, dereference: true });
  }
});

describe('the full fixture site', () => {
  it('builds with no error or warning and passes check', async () => {
    for (const r of reports) expect([r.errors, r.warnings, r.ignored]).toEqual([[], [], []]);
    // Every page of the site is read: 595 pages at 13 kinds.
    expect(reports[0]!.pages_read).toBe(sitePages(join(root, 'day1')));
    expect(reports[0]!.pages_read).toBeGreaterThanOrEqual(595);
    expect(await checkTree(out)).toEqual([]);
  });

  it("serves the spec's 161 assets split 32 / 19 / 85 / 10 / 15", () => {
    const pro = readJson(join(out, 'v1/assets/index.pro.json')).data;
    expect(pro.asset_count).toBe(161);
    expect(Object.fromEntries(Object.entries(pro.universes as Record<string, string[]>).map(([u, s]) => [u, s.length]))).toEqual({
      ai_infrastructure: 32,
      bitcoin_equities: 19,
      crypto: 85,
      quantum: 10,
      us_stock_market: 15,
    });
    for (const u of Object.keys(pro.universes))
      expect(readJson(join(out, `v1/market/${u}/summary.json`)).data.asset_count).toBe(pro.universes[u].length);
  });

  it('gives the free plan the ten largest crypto assets (day 2), with the whole catalogue counted', () => {
    const basic = readJson(join(published(2), 'v1/assets/index.basic.json')).data;
    expect(basic.free_tier.symbols).toEqual(['BTC', 'ETH', 'BNB', 'XRP', 'SOL', 'TRX', 'DOGE', 'LINK', 'ADA', 'NEAR']);
    expect([basic.asset_count, basic.total_asset_count, basic.tier]).toEqual([10, 161, 'basic']);
  });

  it('writes every AssetRisk key on every asset, null where the asset lacks the model', () => {
    for (const a of CATALOG) {
      const r = readJson(join(out, 'v1/assets', a.symbol, 'risk.json')).data;
      for (const key of ['gravity', 'twap', 'sma_composite', 'phase', 'dca'] as const) {
        expect(key in r).toBe(true);
        expect(r[key] === null).toBe(!a.models.includes(key));
      }
    }
  });

  it('flags the assets whose site data is paused as stale where their pages fall behind', () => {
    const ftm = readJson(join(out, 'v1/assets/FTM/risk.json')).data;
    expect(ftm.stale_models).toEqual(['dca']);
    expect(ftm.dca.reading_date).toBe('2025-01-13');
  });

  it("lists in its change feed exactly the tracked changes `diff` reports between consecutive days' trees", async () => {
    const feed = readJson<ChangeLedger>(join(out, 'v1/changes/ledger.json'));
    expect(feed.started_at).toBe('2026-10-14T00:30:00Z');
    for (const day of [2, 3]) {
      const { events } = await compareTrees(diskLoader(published(day - 1)), diskLoader(published(day)));
      const raised = feed.events.filter((e) => e.published_at === `2026-10-${13 + day}T00:30:00Z`);
      // The synthetic markets move: levels, bands and labels change every day, and the free tier on day 3.
      expect(raised.length, `day ${day}`).toBeGreaterThan(20);
      expect(raised, `day ${day}`).toEqual(events);
    }
    expect(feed.events.some((e) => e.field === 'free_tier')).toBe(true);
    expect(feed.events.some((e) => e.universe !== null)).toBe(true);
  });
});
