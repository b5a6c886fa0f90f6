/**
 * Planning as pages are read: an asset is planned once the market pages and all of its own pages are read, in
 * catalogue order whatever order the pages finish in, nothing before planning starts, and to the same documents
 * as planning the whole tree at once.
 */
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { AssetRisk } from '../../generator/api/asset-risk.js';
import { blankRow, PublishedRows, type PlannedLedger } from '../../generator/api/history.js';
import { plainRows } from '../../generator/contract/ledger-rows.js';
import { TREE } from '../../generator/contract/tree.js';
import { openApiDocument } from '../../generator/openapi/document.js';
import { AssetPlanner, type PlannerInputs } from '../../generator/plan-as-read.js';
import { planTree } from '../../generator/plan-tree.js';
import { discover, type PageRef } from '../../generator/site/discover.js';
import { readSite } from '../../generator/site/read-site.js';
import type { PageResult } from '../../generator/site/readings.js';
import { CATALOG, smallSite, tempDir } from '../helpers.js';

const catalog = CATALOG.filter((a) => ['BTC', 'SPY'].includes(a.symbol));
const btcRows = [{ ...blankRow('2026-01-04', 'weekly_archive'), price: 90_000 }];
const btcLedger = PublishedRows.parsed(btcRows);
const btcPage: PageRef = { file: 'BTC_Price_TWAP_Gravity_Analysis.html', kind: 'crypto_gravity', symbol: 'BTC' };
const spyPage: PageRef = { file: 'SPY_Equities_TWAP.html', kind: 'equity_twap', symbol: 'SPY' };
const resultOf = (ref: PageRef): PageResult => ({ file: ref.file, kind: ref.kind, symbol: ref.symbol });

function planner(over: Partial<PlannerInputs> = {}) {
  const emitted: string[] = [];
  const docs = new Map<string, unknown>();
  const p = new AssetPlanner({
    catalog,
    pages: [btcPage, spyPage],
    vanished: [],
    ledgers: new Map([['BTC', btcLedger]]),
    previousRisk: async () => undefined,
    warnings: [],
    emit: (path, doc) => {
      emitted.push(path);
      docs.set(path, doc);
    },
    ...over,
  });
  return { p, emitted, docs };
}

/** Lets the planner's promise chain run. */
const settle = () => new Promise((r) => setImmediate(r));

describe('AssetPlanner', () => {
  it('plans an asset once its pages are read, in catalogue order, and nothing before it starts', async () => {
    const { p, emitted } = planner();
    p.read({ ref: spyPage, result: resultOf(spyPage), changed: true });
    await settle();
    expect(emitted).toEqual([]);
    p.start();
    await settle();
    expect(emitted).toEqual([]); // SPY waits for BTC, which comes first in the catalogue
    p.read({ ref: btcPage, result: resultOf(btcPage), changed: true });
    await settle();
    expect(emitted).toEqual(expect.arrayContaining([TREE.risk('BTC'), TREE.historyFull('BTC'), TREE.risk('SPY'), TREE.historyFull('SPY')]));
    const owner = emitted.map((path) => (path.includes('/BTC') ? 'BTC' : 'SPY'));
    expect(owner).toEqual([...owner].sort()); // every BTC document before any of SPY's
  });

  it("gives the same documents as planning the whole tree at once, the previous ledger's rows carried", async () => {
    const ranks: PageRef = { file: 'Crypto_Story_Galaxy.html', kind: 'market_cap_ranking', symbol: null };
    const ranking: PageResult = { ...resultOf(ranks), ranking: [{ symbol: 'BTC', rank: 1 }] };
    const { p, docs } = planner({ pages: [ranks, btcPage, spyPage] });
    p.start();
    for (const ref of [btcPage, spyPage]) p.read({ ref, result: resultOf(ref), changed: true });
    await settle();
    expect(docs.size).toBe(0); // every asset waits for the market pages
    p.read({ ref: ranks, result: ranking, changed: true });
    const { plans, market } = await p.finish();
    expect(market.freeTier).toEqual(['BTC']);
    const whole = planTree({
      catalog,
      pages: [ranks, btcPage, spyPage],
      results: [ranking, ...[btcPage, spyPage].map(resultOf)],
      failedKinds: new Map(),
      market,
      previous: { ledgers: new Map([['BTC', btcLedger]]), risks: new Map(), assets: [] },
      builtAt: '2026-10-14T00:30:00Z',
      renderVersion: 'test',
      info: openApiDocument().info,
    }).objects;
    expect([...plans.keys()]).toEqual(['BTC', 'SPY']);
    for (const [path, doc] of docs) expect(isDeepStrictEqual(doc, whole.get(path)), path).toBe(true);
    expect(plainRows((docs.get(TREE.historyFull('BTC')) as PlannedLedger).data.rows)[0]).toEqual(btcRows[0]);
  });

  it("carries a failed page's readings from the previous AssetRisk, and a failure to read it fails finish", async () => {
    const price = { value: 7, currency: 'USD', source_page: btcPage.file };
    const { p, docs } = planner({ previousRisk: async (s) => (s === 'BTC' ? ({ price } as unknown as AssetRisk) : undefined) });
    p.read({ ref: btcPage, changed: true });
    p.read({ ref: spyPage, result: resultOf(spyPage), changed: true });
    await p.finish();
    expect((docs.get(TREE.risk('BTC')) as { data: AssetRisk }).data.price).toEqual(price);

    const failing = planner({ previousRisk: async () => Promise.reject(new Error('the previous tree is gone')) });
    failing.p.read({ ref: btcPage, changed: true });
    failing.p.read({ ref: spyPage, result: resultOf(spyPage), changed: true });
    await expect(failing.p.finish()).rejects.toThrow('the previous tree is gone');
  });

  it('plans nothing more once stopped', async () => {
    const { p, emitted } = planner();
    p.start();
    p.stop();
    for (const ref of [btcPage, spyPage]) p.read({ ref, result: resultOf(ref), changed: true });
    await settle();
    expect(emitted).toEqual([]);
  });

  it("fed by readSite, hands an asset's documents over while later pages are still unread", async () => {
    const site = tempDir('rr-plan-as-read-');
    const symbols = ['BTC', 'ETH', 'SPY'];
    await smallSite(site, 1, '2025-06-01', symbols);
    const assets = CATALOG.filter((a) => symbols.includes(a.symbol));
    const found = await discover(site, assets);
    let read = 0;
    const readAtEmit: number[] = [];
    const p = new AssetPlanner({
      catalog: assets,
      pages: found.pages,
      vanished: [],
      ledgers: new Map(),
      previousRisk: async () => undefined,
      warnings: [],
      emit: (path) => void (path.endsWith('/risk.json') && readAtEmit.push(read)),
    });
    p.start();
    const order = [...found.pages].sort((a, b) =>
      a.symbol === null ? -1 : b.symbol === null ? 1 : symbols.indexOf(a.symbol) - symbols.indexOf(b.symbol),
    );
    await readSite(site, order, undefined, () => false, 1, {
      onRead: (r) => {
        read++;
        p.read(r);
      },
    });
    await p.finish();
    expect(readAtEmit).toHaveLength(3);
    expect(readAtEmit[0]).toBeLessThan(found.pages.length);
  });
});
