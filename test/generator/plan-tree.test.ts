/**
 * The build's pure core, alone: the same inputs give the same documents, a previous ledger's rows are carried
 * whole, the readings of a failed page are the previous tree's, and a published asset cannot vanish.
 */
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { AssetRisk } from '../../generator/api/asset-risk.js';
import { blankRow, HistoryLossError, PublishedRows, type PlannedLedger } from '../../generator/api/history.js';
import { plainRows } from '../../generator/contract/ledger-rows.js';
import { UNIVERSES } from '../../generator/catalog/catalog.js';
import { TREE } from '../../generator/contract/tree.js';
import { openApiDocument } from '../../generator/openapi/document.js';
import { planTree, type TreeInputs } from '../../generator/plan-tree.js';
import { CATALOG } from '../helpers.js';

const catalog = CATALOG.filter((a) => ['BTC', 'SPY'].includes(a.symbol));
const row = (date: string, price: number) => ({ ...blankRow(date, 'weekly_archive'), price });
const btcRows = [row('2026-01-04', 90_000), row('2026-01-11', 95_000)];

const inputs = (over: Partial<TreeInputs> = {}): TreeInputs => ({
  catalog,
  pages: [],
  results: [],
  failedKinds: new Map(),
  market: {
    contexts: Object.fromEntries(UNIVERSES.map((u) => [u, { universe: u, fear_greed: null, peak_valley: null, macro_risk: null }])),
    ranks: new Map([['BTC', 1]]),
    freeTier: ['BTC'],
  },
  previous: { ledgers: new Map([['BTC', PublishedRows.parsed(btcRows)]]), risks: new Map(), assets: ['BTC', 'SPY'] },
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
    const full = planTree(inputs()).objects.get(TREE.historyFull('BTC')) as PlannedLedger;
    expect(plainRows(full.data.rows)).toEqual(btcRows);
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
    const planned = planTree(
      inputs({
        failedKinds: new Map([['BTC', new Set(['crypto_gravity' as const])]]),
        previous: { ...inputs().previous, risks: new Map([['BTC', prev]]) },
      }),
    );
    expect((planned.objects.get(TREE.risk('BTC')) as { data: AssetRisk }).data.gravity).toEqual(gravity);
  });

  it('refuses a tree in which an asset with published history is gone', () => {
    expect(() => planTree(inputs({ previous: { ...inputs().previous, assets: ['BTC', 'SPY', 'GONE'] } }))).toThrow(HistoryLossError);
  });
});
