/**
 * The build's pure core, alone: the same inputs give the same documents, a previous ledger's rows are carried
 * whole, the readings of a failed page are the previous tree's, a failed market page keeps the previous market
 * reading, and a published asset cannot vanish.
 */
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { AssetRisk } from '../../generator/api/asset-risk.js';
import { carriedFrom } from '../../generator/site/carry.js';
import { blankRow, HistoryLossError, type Ledger } from '../../generator/api/history.js';
import { TREE } from '../../generator/contract/tree.js';
import { openApiDocument } from '../../generator/openapi/document.js';
import { planTree, type TreeInputs } from '../../generator/plan-tree.js';
import { KINDS } from '../../generator/site/registry.js';
import { CATALOG } from '../helpers.js';

const catalog = CATALOG.filter((a) => ['BTC', 'SPY'].includes(a.symbol));
const row = (date: string, price: number) => ({ ...blankRow(date, 'weekly_archive'), price });
const btcRows = [row('2026-01-04', 90_000), row('2026-01-11', 95_000)];

const inputs = (over: Partial<TreeInputs> = {}): TreeInputs => ({
  catalog,
  pages: [],
  results: [{ file: 'Crypto_Story_Galaxy.html', kind: 'market_cap_ranking', symbol: null, ranking: [{ symbol: 'BTC', rank: 1 }] }],
  carried: new Map(),
  failedMarket: new Set(),
  previous: { ledgers: new Map([['BTC', btcRows]]), risks: new Map(), assets: ['BTC', 'SPY'] },
  builtAt: '2026-10-14T00:30:00Z',
  renderVersion: 'risk-readings test',
  info: openApiDocument().info,
  ...over,
});

describe('planTree', () => {
  it('is a function of its inputs: twice the same documents, every file of the tree but the manifest', () => {
    const a = planTree(inputs()).objects;
    const b = planTree(inputs()).objects;
    expect(isDeepStrictEqual(a, b)).toBe(true);
    expect([...a.keys()]).toEqual(
      expect.arrayContaining([TREE.risk('BTC'), TREE.historyFull('SPY'), TREE.catalog, TREE.openapi, TREE.health]),
    );
    expect(a.has(TREE.manifest)).toBe(false);
  });

  it("carries the previous ledger's rows whole when no page gave a reading", () => {
    const planned = planTree(inputs());
    expect((planned.objects.get(TREE.historyFull('BTC')) as Ledger).data.rows).toEqual(btcRows);
    expect(planned.ledgers.get('BTC')).toEqual(btcRows);
  });

  it("takes a failed page's readings from the previous AssetRisk", () => {
    const gravity = {
      score: 42,
      risk_level: 5,
      verdict: 'v',
      as_of: '2026-10-13',
      as_of_basis: 'trace_end' as const,
      model: 'twap_gravity@1',
      source_page: 'p.html',
    };
    const prev = { gravity, price: { value: 1, currency: 'USD', source_page: 'p.html' } } as unknown as AssetRisk;
    const planned = planTree(inputs({ carried: new Map([['BTC', carriedFrom(prev, KINDS.crypto_gravity.readings)]]) }));
    expect((planned.objects.get(TREE.risk('BTC')) as { data: AssetRisk }).data.gravity).toEqual(gravity);
  });

  it('keeps the previous market reading of a failed market page, and warns of a market page that gave none', () => {
    const fearGreed = { value: 61, label: 'Greed', as_of: '2026-10-13', as_of_basis: 'page_stamp', model: 'm', source_page: 'f.html' };
    const prev = { market_context: { fear_greed: fearGreed, peak_valley: null } } as unknown as AssetRisk;
    const risks = new Map([['BTC', prev]]);
    const carried = planTree(inputs({ failedMarket: new Set(['crypto_fear_greed' as const]), previous: { ...inputs().previous, risks } }));
    const context = (p: typeof carried) => (p.objects.get(TREE.risk('BTC')) as { data: AssetRisk }).data.market_context;
    expect(context(carried).fear_greed).toEqual(fearGreed);
    const none = planTree(inputs({ previous: { ...inputs().previous, risks } }));
    expect(context(none).fear_greed).toBeNull();
    expect(none.warnings).toContainEqual(expect.stringMatching(/^crypto fear & greed: no reading/));
  });

  it('plans a tree with no ranking read and no previous ranks: no free tier, the examples quote an asset all the same', () => {
    const planned = planTree(inputs({ results: [] }));
    expect((planned.objects.get(TREE.catalog) as { free_tier: string[] }).free_tier).toEqual([]);
    expect(planned.warnings).toContainEqual(expect.stringMatching(/^market-cap ranking: Crypto_Story_Galaxy.html missing/));
    expect(JSON.stringify(planned.objects.get(TREE.openapi))).toContain('GET /v1/assets/BTC/risk');
  });

  it('refuses a tree in which an asset with published history is gone', () => {
    expect(() => planTree(inputs({ previous: { ...inputs().previous, assets: ['BTC', 'SPY', 'GONE'] } }))).toThrow(HistoryLossError);
  });
});
