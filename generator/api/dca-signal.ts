/** `GET /v1/signals/dca/{symbol}`: the regression state as a band, never a position size. */
import type { AssetRisk } from './asset-risk.js';
import { envelope } from './envelope.js';

const MULTIPLIER_NOTE =
  "The regression model publishes a risk band, not a sizing rule: there is no multiplier to apply. Any position sizing is the reader's own decision.";

export function dcaSignal(r: AssetRisk) {
  const d = r.dca;
  if (!d) return null;
  const level = Math.min(10, Math.floor(Number(d.band.split('-')[0]) * 10 + 1e-9) + 1);
  // The signal is dated (the spec: as_of, a date string); the contract lets a reading's own as_of be null.
  const day = d.as_of?.slice(0, 10) ?? d.reading_date;
  if (!day) throw new Error(`${r.symbol}: its DCA reading carries no date, so no signal can be published for it`);
  return envelope(
    {
      symbol: r.symbol,
      free_tier: r.free_tier,
      as_of: day,
      reading_date: d.reading_date ?? day,
      state: {
        band: d.band,
        risk: d.risk,
        band_label: `Risk level ${level} of 10: ${d.band}`,
        price: d.price,
        fair_value: d.fair_value,
        floor: d.floor,
        ceiling: d.ceiling,
        premium_pct: d.premium_pct,
        premium_source: d.premium_source,
      },
      multiplier: null,
      multiplier_note: MULTIPLIER_NOTE,
      model: d.model,
      source_page: d.source_page,
    },
    [d],
  );
}
