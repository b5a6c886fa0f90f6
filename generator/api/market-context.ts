/** MarketContext per universe: the crypto market pages for `crypto`, the sector indicators for the equity universes. */
import type { Universe } from '../catalog/catalog.js';
import type { MarketContext } from '../contract/shapes.js';
import type { FearGreedReading, PeakValleyReading, SectorReadings } from '../site/readings.js';

export type { MarketContext } from '../contract/shapes.js';

export function marketContexts(
  universes: readonly Universe[],
  crypto: { fear_greed: FearGreedReading | null; peak_valley: PeakValleyReading | null },
  sectors: Partial<Record<string, SectorReadings>>,
): Record<Universe, MarketContext> {
  const out = {} as Record<Universe, MarketContext>;
  for (const u of universes) {
    if (u === 'crypto') out[u] = { universe: u, fear_greed: crypto.fear_greed, peak_valley: crypto.peak_valley, macro_risk: null };
    else {
      const s = sectors[u];
      out[u] = { universe: u, fear_greed: s?.fear_greed ?? null, peak_valley: s?.peak_valley ?? null, macro_risk: s?.macro_risk ?? null };
    }
  }
  return out;
}

export const contextReadings = (c: MarketContext) => [c.fear_greed, c.peak_valley, c.macro_risk];
