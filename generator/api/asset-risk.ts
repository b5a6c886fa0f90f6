/** AssetRisk: one asset's readings, every model key present (null where the asset lacks the model). */
import type { Asset } from '../catalog/catalog.js';
import type { ModelKey } from '../contract/constants.js';
import type { AssetRisk, Price, Twap } from '../contract/shapes.js';
import type { PageKind, PageResult } from '../site/readings.js';
import { dailyReadings, staleModels } from '../contract/stale.js';
import { newest } from './envelope.js';
import type { MarketContext } from './market-context.js';

export type { AssetRisk } from '../contract/shapes.js';

/** The readings one asset's pages gave this build, by page kind. */
export type AssetPages = Partial<Record<PageKind, PageResult>>;

/** Readings carried from the previous tree for pages that failed under --keep-going. */
export type Carried = Partial<Pick<AssetRisk, 'price' | 'gravity' | 'twap' | 'sma_composite' | 'phase' | 'dca'>>;

export function assembleAssetRisk(
  asset: Asset,
  pages: AssetPages,
  carried: Carried,
  market: { freeTier: ReadonlySet<string>; ranks: ReadonlyMap<string, number>; context: MarketContext },
): AssetRisk {
  const has = (m: ModelKey) => asset.models.includes(m);
  // A page's reading is the API's object (contract/shapes.ts), so it is served as it was read.
  const crypto = asset.asset_class === 'CRYPTO';
  const gravityPage = crypto ? pages.crypto_gravity : pages.equity_twap;
  const pick = <K extends keyof Carried>(key: K, fresh: NonNullable<Carried[K]> | null): NonNullable<Carried[K]> | null =>
    fresh ?? carried[key] ?? null;

  const price: Price = gravityPage?.price
    ? { value: gravityPage.price.value, currency: 'USD', source_page: gravityPage.price.source_page }
    : (carried.price ?? { value: null, currency: 'USD', source_page: null });

  let twap: Twap | null = null;
  if (has('twap')) {
    const base = gravityPage?.twap;
    const risk = pages.crypto_twap_risk?.twap_risk;
    if (base) {
      const { baseline, premium_pct, ...stamp } = base;
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
    gravity: has('gravity') ? pick('gravity', gravityPage?.gravity ?? null) : null,
    twap,
    sma_composite: has('sma_composite')
      ? pick('sma_composite', (crypto ? pages.crypto_sma_20w : pages.equity_sma_composite)?.sma_composite ?? null)
      : null,
    phase: has('phase') ? pick('phase', (crypto ? pages.crypto_phase : pages.equity_valuation)?.phase ?? null) : null,
    dca: has('dca') ? pick('dca', pages.dca_regression?.dca ?? null) : null,
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
