/** `GET /v1/market/{universe}/summary`: medians, Gravity bands (decision 7) and the barometer (decision 8). */
import type { Universe } from '../catalog/catalog.js';
import { GRAVITY_BANDS, gravityBandIndex, type GravityBand } from '../contract/constants.js';
import type { AssetRisk } from './asset-risk.js';
import type { SummaryResponse } from '../contract/shapes.js';
import { envelope } from './envelope.js';
import type { MarketContext } from './market-context.js';

const round = (x: number, d: number) => Math.round(x * 10 ** d) / 10 ** d;

function median(xs: number[]): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return round(s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2, 2);
}

const mean = (xs: number[]): number | null => (xs.length ? round(xs.reduce((a, b) => a + b, 0) / xs.length, 2) : null);

/** Decision 7, the band edges defined once in the contract. */
export const gravityBand = (s: number): GravityBand => GRAVITY_BANDS[gravityBandIndex(s)]!;

export function universeSummary(universe: Universe, members: AssetRisk[], context: MarketContext): SummaryResponse {
  const scored = members.filter((r) => r.gravity).map((r) => ({ symbol: r.symbol, score: r.gravity!.score }));
  const bands = { accumulation: 0, mid_cycle: 0, late_cycle: 0, cycle_top: 0 };
  for (const s of scored) bands[gravityBand(s.score)]++;
  const bySymbol = (a: { symbol: string }, b: { symbol: string }) => (a.symbol < b.symbol ? -1 : a.symbol > b.symbol ? 1 : 0);
  const premiums = members.map((r) => r.twap?.premium_pct).filter((x): x is number => typeof x === 'number');
  const sma = members.map((r) => r.sma_composite?.score).filter((x): x is number => typeof x === 'number');
  const data = {
    universe,
    asset_count: members.length,
    gravity: {
      median: median(scored.map((s) => s.score)),
      mean: mean(scored.map((s) => s.score)),
      bands,
      lowest: [...scored].sort((a, b) => a.score - b.score || bySymbol(a, b)).slice(0, 5),
      highest: [...scored].sort((a, b) => b.score - a.score || bySymbol(a, b)).slice(0, 5),
    },
    twap_premium_pct: {
      median: median(premiums),
      share_above_twap: premiums.length ? round(premiums.filter((p) => p > 0).length / premiums.length, 4) : null,
    },
    sma_composite: { median: median(sma) },
    barometer: {
      peak_valley: context.peak_valley
        ? { score: context.peak_valley.score, zone: context.peak_valley.zone, scope: context.peak_valley.scope }
        : null,
      fear_greed: context.fear_greed
        ? { value: context.fear_greed.value, label: context.fear_greed.label, provider: context.fear_greed.provider }
        : null,
    },
  };
  const readings = [...members.flatMap((r) => [r.gravity, r.twap, r.sma_composite]), context.peak_valley, context.fear_greed];
  return envelope(data, readings);
}
