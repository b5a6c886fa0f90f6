/**
 * The registry of page kinds, held to what each descriptor says: every kind's page (our fixture of it) is found by
 * discovery under its kind, yields exactly the readings it declares, holds a weekly archive exactly when it says so,
 * and no date among its readings escapes the guard, which allows it a day past --now or a week by its cadence.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { instant } from '../../../generator/contract/time.js';
import { classify, expectedPages } from '../../../generator/site/discover.js';
import { pageGuard } from '../../../generator/site/guards.js';
import { parseAs } from '../../../generator/site/parse-page.js';
import { KIND_LIST, KINDS, type PageKind } from '../../../generator/site/registry.js';
import { CATALOG, smallSite, tempDir } from '../../helpers.js';

const site = tempDir('rr-registry-');
const SYMBOLS = ['BTC', 'ETH', 'SPY'];
const assets = CATALOG.filter((a) => SYMBOLS.includes(a.symbol));
let pages: { file: string; kind: PageKind; symbol: string | null }[] = [];

beforeAll(async () => {
  await smallSite(site, 1, '2025-06-01', SYMBOLS);
  pages = classify(readdirSync(site), assets).pages;
});

describe('the registry of page kinds', () => {
  it('names each kind once, under its descriptor name, and the synthetic site has a page of every one', () => {
    for (const [key, d] of Object.entries(KINDS)) expect(d.name).toBe(key);
    expect(new Set(pages.map((p) => p.kind))).toEqual(new Set(Object.keys(KINDS)));
  });

  it("gives each asset the pages its class and models ask for, in the registry's order", () => {
    // A new kind of either class belongs in these lists, in the registry's order.
    const extend = (symbol: string) => `${symbol}'s pages: a new kind of its class is added to this list`;
    const btc = CATALOG.find((a) => a.symbol === 'BTC')!;
    expect(
      expectedPages(btc).map((p) => p.kind),
      extend('BTC'),
    ).toEqual(['crypto_gravity', 'crypto_twap_risk', 'crypto_sma_20w', 'crypto_phase', 'dca_regression']);
    const spy = CATALOG.find((a) => a.symbol === 'SPY')!;
    expect(
      expectedPages(spy).map((p) => p.kind),
      extend('SPY'),
    ).toEqual(['equity_twap', 'equity_sma_composite', 'equity_valuation', 'dca_regression']);
    // An asset whose catalogue lists no DCA model has no regression page to find; a kind whose reading has a model of
    // its own (model null in readings.ts) is every asset's of its class, so it belongs in this list too.
    expect(
      expectedPages({ ...btc, models: ['gravity'] }).map((p) => p.kind),
      'the pages of a crypto asset whose catalogue lists the gravity model alone: a new crypto kind with a model of its own is added to this list',
    ).toEqual(['crypto_gravity']);
  });

  describe.each(KIND_LIST.map((k) => [k.name, k] as const))('%s', (name, kind) => {
    const page = () => pages.find((p) => p.kind === name)!;
    const parsed = () => parseAs(name, readFileSync(join(site, page().file)), page().file, true);

    it('yields exactly the readings it declares, and an archive exactly when it holds one', () => {
      const { file: _f, kind: _k, symbol: _s, archive, identity: _i, ...readings } = parsed();
      expect(Object.keys(readings).sort()).toEqual([...kind.readings].sort());
      expect(archive !== undefined, 'archive').toBe(kind.archive);
    });

    it('has every date among its readings guarded, with the allowance of its cadence', () => {
      const result = { ...parsed(), symbol: page().symbol };
      const dates = [...JSON.stringify(result).matchAll(/"(?:as_of|date)":"(\d{4}-\d\d-\d\d[^"]*)"/g)].map((m) => m[1]!);
      // The ranking carries no date at all: nothing of it to guard.
      if (!dates.length) return expect(kind.readings).toEqual(['ranking']);
      const latest = Math.max(...dates.map((d) => instant(d)));
      const day = 86_400_000;
      const allowed = kind.cadence === 'weekly' ? 7 : 1;
      // --now just inside the allowance of the latest date passes; a day earlier fails, naming a reading's date.
      const at = (days: number) => new Date(latest - days * day).toISOString();
      expect(pageGuard(CATALOG, at(allowed - 0.5))(result, page())).toBeNull();
      expect(pageGuard(CATALOG, at(allowed + 0.5))(result, page())?.field).toMatch(/\.as_of$|^price /);
    });
  });
});
