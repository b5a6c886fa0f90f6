/** AssetRisk: one asset's readings, every model key present (null where the asset lacks the model). */
import type { Asset } from '../catalog/catalog.js';
import type { ModelKey } from '../contract/constants.js';
import type { AssetRisk, Price, Twap } from '../contract/shapes.js';
import type { ReadingKey, Readings } from '../site/readings.js';
import { dailyReadings, staleModels } from '../contract/stale.js';
import { newest } from './envelope.js';
import type { MarketContext } from './market-context.js';

export type { AssetRisk } from '../contract/shapes.js';

/** The readings one asset's pages gave this build, merged: each reading comes from one page of the asset. */
export type AssetReadings = Partial<Readings>;

/**
 * Readings carried from the previous tree for pages that failed under --keep-going, as it published them: the
 * model objects whole, and the TWAP risk level (which the TWAP object carries) on its own.
 */
export type Carried = Partial<Pick<AssetRisk, 'price' | 'gravity' | 'twap' | 'sma_composite' | 'phase' | 'dca'>> & {
  twap_risk?: Pick<Twap, 'risk_level' | 'risk_level_model'>;
};

/** The previous AssetRisk's value of each reading a failed page yields (market readings are carried elsewhere). */
export function carriedFrom(prev: AssetRisk | undefined, readings: Iterable<ReadingKey>): Carried {
  const carried: Carried = {};
  for (const key of readings) {
    if (key === 'twap_risk') {
      if (prev?.twap) carried.twap_risk = { risk_level: prev.twap.risk_level, risk_level_model: prev.twap.risk_level_model };
    } else if (key === 'price' || key === 'gravity' || key === 'twap' || key === 'sma_composite' || key === 'phase' || key === 'dca')
      (carried as Record<string, unknown>)[key] = prev?.[key] ?? undefined;
  }
  return carried;
}

export function assembleAssetRisk(
  asset: Asset,
  read: AssetReadings,
  carried: Carried,
  market: { freeTier: ReadonlySet<string>; ranks: ReadonlyMap<string, number>; context: MarketContext },
): AssetRisk {
  const has = (m: ModelKey) => asset.models.includes(m);
  // A page's reading is the API's object (contract/shapes.ts), so it is served as it was read.
  const crypto = asset.asset_class === 'CRYPTO';
  const pick = <K extends keyof Carried>(key: K, fresh: NonNullable<Carried[K]> | undefined): NonNullable<Carried[K]> | null =>
    fresh ?? carried[key] ?? null;

  const price: Price = read.price
    ? { value: read.price.value, currency: 'USD', source_page: read.price.source_page }
    : (carried.price ?? { value: null, currency: 'USD', source_page: null });

  // The TWAP object is the Gravity page's baseline and premium (its as_of and source page too) with the risk level
  // of the TWAP-risk page, a separate model.
  let twap: Twap | null = null;
  if (has('twap')) {
    const risk = read.twap_risk ?? carried.twap_risk;
    if (read.twap) {
      const { baseline, premium_pct, ...stamp } = read.twap;
      const risk_level = risk?.risk_level ?? null;
      twap = { baseline, premium_pct, risk_level, risk_level_model: risk_level !== null ? risk!.risk_level_model : null, ...stamp };
    } else if (carried.twap) {
      twap = {
        ...carried.twap,
        ...(risk ? { risk_level: risk.risk_level, risk_level_model: risk.risk_level != null ? risk.risk_level_model : null } : {}),
      };
    }
  }

  const readings = {
    asset_class: asset.asset_class,
    gravity: has('gravity') ? pick('gravity', read.gravity) : null,
    twap,
    sma_composite: has('sma_composite') ? pick('sma_composite', read.sma_composite) : null,
    phase: has('phase') ? pick('phase', read.phase) : null,
    dca: has('dca') ? pick('dca', read.dca) : null,
  };
  return {
    symbol: asset.symbol,
    name: asset.name,
    asset_class: asset.asset_class,
    universes: [...asset.universes],
    as_of: newest(dailyReadings(readings)),
    free_tier: market.freeTier.has(asset.symbol),
    market_cap_rank: crypto ? (market.ranks.get(asset.symbol) ?? null) : null,
    price,
    gravity: readings.gravity ?? null,
    twap: readings.twap,
    sma_composite: readings.sma_composite ?? null,
    phase: readings.phase ?? null,
    dca: readings.dca ?? null,
    market_context: market.context,
    stale_models: staleModels(readings),
  };
}

/** The model readings of an AssetRisk, for the envelope. */
export const riskReadings = (r: AssetRisk) => [r.gravity, r.twap, r.sma_composite, r.phase, r.dca];
/** Models that produced readings beyond the five objects' own `model` (the TWAP risk level). */
export const riskExtraModels = (r: AssetRisk) => [r.twap?.risk_level_model ?? null];
