import { describe, expect, it } from 'vitest';
import { gravityBand, universeSummary } from '../../../generator/api/summary.js';
import type { AssetRisk } from '../../../generator/api/asset-risk.js';
import { staleModels } from '../../../generator/contract/stale.js';
import { envelope, modelVersion, newest } from '../../../generator/api/envelope.js';
import type { MarketContext } from '../../../generator/api/market-context.js';

const context: MarketContext = { universe: 'quantum', fear_greed: null, peak_valley: null, macro_risk: null };
const stamp = (as_of: string, model = 'twap_gravity_equity@1') => ({
  as_of,
  as_of_basis: 'trace_end' as const,
  model,
  source_page: 'p.html',
});
const asset = (symbol: string, score: number | null, premium: number | null = null): AssetRisk => ({
  symbol,
  name: symbol,
  asset_class: 'EQUITY',
  universes: ['quantum'],
  as_of: '2026-10-13',
  free_tier: false,
  market_cap_rank: null,
  price: { value: 1, currency: 'USD', source_page: 'p.html' },
  gravity: score === null ? null : { score, risk_level: 1, verdict: 'v', ...stamp('2026-10-13') },
  twap: premium === null ? null : { baseline: 1, premium_pct: premium, risk_level: null, risk_level_model: null, ...stamp('2026-10-13') },
  sma_composite: null,
  phase: null,
  dca: null,
  market_context: context,
  stale_models: [],
});

describe('universe summary (decisions 7 and 8)', () => {
  it('bands by the decided thresholds, boundaries included upward', () => {
    expect([0, 24.99, 25, 49.99, 50, 74.99, 75, 100].map(gravityBand)).toEqual([
      'accumulation',
      'accumulation',
      'mid_cycle',
      'mid_cycle',
      'late_cycle',
      'late_cycle',
      'cycle_top',
      'cycle_top',
    ]);
  });
  it('counts only assets with a Gravity reading; lowest and highest hold at most 5, ties by symbol', () => {
    const members = [
      asset('B', 10, 5),
      asset('A', 10, -1),
      asset('C', 30),
      asset('D', 60),
      asset('E', 80),
      asset('F', 90),
      asset('G', 95),
      asset('H', null),
    ];
    const d = universeSummary('quantum', members, context).data;
    expect(d.asset_count).toBe(8);
    expect(d.gravity.bands).toEqual({ accumulation: 2, mid_cycle: 1, late_cycle: 1, cycle_top: 3 });
    expect(d.gravity.lowest).toEqual([
      { symbol: 'A', score: 10 },
      { symbol: 'B', score: 10 },
      { symbol: 'C', score: 30 },
      { symbol: 'D', score: 60 },
      { symbol: 'E', score: 80 },
    ]);
    expect(d.gravity.highest.map((x) => x.symbol)).toEqual(['G', 'F', 'E', 'D', 'C']);
    expect([d.gravity.median, d.gravity.mean]).toEqual([60, 53.57]);
    expect(d.twap_premium_pct).toEqual({ median: 2, share_above_twap: 0.5 });
    expect(d.barometer).toEqual({ peak_valley: null, fear_greed: null });
  });
  it('answers a universe with nothing to aggregate with nulls and empty lists', () => {
    const d = universeSummary('quantum', [asset('A', null)], context).data;
    expect(d.gravity).toEqual({
      median: null,
      mean: null,
      bands: { accumulation: 0, mid_cycle: 0, late_cycle: 0, cycle_top: 0 },
      lowest: [],
      highest: [],
    });
    expect(d.twap_premium_pct.share_above_twap).toBeNull();
  });
});

describe('stale models (decision 17)', () => {
  const r = (g: string, sma: string | null, phase: string | null = null) => ({
    asset_class: 'CRYPTO' as const,
    gravity: { ...stamp(g, 'twap_gravity_crypto@1'), score: 1, risk_level: 1, verdict: '' },
    twap: null,
    dca: null,
    sma_composite: sma ? { ...stamp(sma, 'sma_20w_crypto@1'), score: 1, page_value: 0.01, band: '0.0-0.1' } : null,
    phase: phase
      ? { ...stamp(phase, 'polynomial_phase_crypto@1'), label: 'x', completion_pct: 1, fair_value: 1, max_euphoria_target: 1 }
      : null,
  });
  it('flags a page more than three days behind the newest daily page, not one three days behind', () => {
    expect(staleModels(r('2026-10-13T23:58:00Z', '2026-10-09T23:55:00Z'))).toEqual(['sma_composite']);
    expect(staleModels(r('2026-10-13T23:58:00Z', '2026-10-10T23:55:00Z'))).toEqual([]);
  });
  it('never flags a weekly bar labelled ahead of the stamp', () => {
    expect(staleModels(r('2026-10-13T23:58:00Z', '2026-10-13T23:55:00Z', '2026-10-18'))).toEqual([]);
    expect(staleModels(r('2026-10-13T23:58:00Z', null, '2026-10-04'))).toEqual(['phase']);
  });
});

describe('envelope (decision 16)', () => {
  it('keys model_version by name without version and takes as_of from the newest daily reading', () => {
    const e = envelope({}, [
      stamp('2026-10-13', 'dca_regression@1'),
      stamp('2026-10-13T23:58:00Z', 'twap_gravity_crypto@1'),
      stamp('2026-10-18', 'polynomial_phase_crypto@1'),
      null,
    ]);
    expect(e.as_of).toBe('2026-10-13T23:58:00Z');
    expect(e.model_version).toEqual({ dca_regression: '1', polynomial_phase_crypto: '1', twap_gravity_crypto: '1' });
    expect(modelVersion([null])).toBeNull();
    expect(newest(['2026-10-13', null, '2026-10-12T23:00:00Z'])).toBe('2026-10-13');
  });
});
