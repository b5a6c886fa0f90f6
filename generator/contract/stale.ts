/** Decision 17: which of an asset's model readings are stale, a rule the build applies and its validation re-checks. */
import { MODEL_KEYS, type ModelKey } from './constants.js';
import { instant, newest } from './time.js';

const DAY_MS = 86_400_000;
/** Spec: a model is stale when its page is more than three days behind the asset's newest page. */
const STALE_AFTER_DAYS = 3;

/** What the rule reads of an AssetRisk: each model's as_of, and the class that decides which readings are daily. */
export type StaleInput = { asset_class: 'CRYPTO' | 'EQUITY' } & Record<ModelKey, { as_of: string | null } | null | undefined>;

/** Daily readings set the asset's as_of; weekly ones (phase, the equity composite) do not. A reading without one counts for neither. */
export function dailyReadings(r: StaleInput): (string | null | undefined)[] {
  return [r.gravity?.as_of, r.twap?.as_of, r.asset_class === 'CRYPTO' ? r.sma_composite?.as_of : undefined, r.dca?.as_of];
}

/** The AssetRisk keys of readings more than three days behind the asset's newest daily page, sorted. */
export function staleModels(r: StaleInput): ModelKey[] {
  const reference = newest(dailyReadings(r)) ?? newest(MODEL_KEYS.map((k) => r[k]?.as_of));
  if (!reference) return [];
  const refDay = Math.floor(instant(reference.slice(0, 10)) / DAY_MS);
  return MODEL_KEYS.filter((k) => {
    const asOf = r[k]?.as_of;
    return asOf ? refDay - Math.floor(instant(asOf.slice(0, 10)) / DAY_MS) > STALE_AFTER_DAYS : false;
  });
}
