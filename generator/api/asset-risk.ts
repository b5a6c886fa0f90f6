/** AssetRisk: one asset's readings, every model key present (null where the asset lacks the model). */
import type { Asset, ModelKey } from '../catalog/catalog.js';
import type { DcaReading, GravityReading, PageKind, PageResult, PhaseReading, SmaReading } from '../site/readings.js';
import { dailyReadings, staleModels } from '../contract/stale.js';
import { newest } from './envelope.js';
import type { MarketContext } from './market-context.js';

export interface PriceOut {
  value: number | null;
  currency: 'USD';
  source_page: string | null;
}
export interface TwapOut {
  baseline: number | null;
  premium_pct: number | null;
  risk_level: number | null;
  risk_level_model: string | null;
  as_of: string;
  as_of_basis: string;
  model: string;
  source_page: string;
}
type Stamp = { as_of: string; as_of_basis: string; model: string; source_page: string };
const stamp = (r: Stamp): Stamp => ({ as_of: r.as_of, as_of_basis: r.as_of_basis, model: r.model, source_page: r.source_page });

export interface AssetRisk {
  symbol: string;
  name: string;
  asset_class: 'CRYPTO' | 'EQUITY';
  universes: string[];
  as_of: string | null;
  free_tier: boolean;
  market_cap_rank: number | null;
  price: PriceOut;
  gravity: (Omit<GravityReading, keyof Stamp> & Stamp) | null;
  twap: TwapOut | null;
  sma_composite: (Omit<SmaReading, keyof Stamp> & Stamp) | null;
  phase: (Omit<PhaseReading, keyof Stamp> & Stamp) | null;
  dca: (Omit<DcaReading, keyof Stamp> & Stamp) | null;
  market_context: MarketContext;
  stale_models: ModelKey[];
}

/** The readings one asset's pages gave this build, by page kind. */
export type AssetPages = Partial<Record<PageKind, PageResult>>;

/** Readings carried from the previous tree for pages that failed under --keep-going. */
export type Carried = Partial<Pick<AssetRisk, 'price' | 'gravity' | 'twap' | 'sma_composite' | 'phase' | 'dca'>>;

function gravityOut(p: PageResult | undefined): AssetRisk['gravity'] {
  const g = p?.gravity;
  return g ? { score: g.score, risk_level: g.risk_level, verdict: g.verdict, ...stamp(g) } : null;
}

function smaOut(p: PageResult | undefined): AssetRisk['sma_composite'] {
  const s = p?.sma_composite;
  return s ? { score: s.score, page_value: s.page_value, band: s.band, ...stamp(s) } : null;
}

function phaseOut(p: PageResult | undefined): AssetRisk['phase'] {
  const s = p?.phase;
  return s
    ? {
        label: s.label,
        completion_pct: s.completion_pct,
        fair_value: s.fair_value,
        max_euphoria_target: s.max_euphoria_target,
        ...stamp(s),
      }
    : null;
}

function dcaOut(p: PageResult | undefined): AssetRisk['dca'] {
  const d = p?.dca;
  return d
    ? {
        band: d.band,
        risk: d.risk,
        price: d.price,
        fair_value: d.fair_value,
        floor: d.floor,
        ceiling: d.ceiling,
        premium_pct: d.premium_pct,
        premium_source: d.premium_source,
        reading_date: d.reading_date,
        ...stamp(d),
      }
    : null;
}

export function assembleAssetRisk(
  asset: Asset,
  pages: AssetPages,
  carried: Carried,
  market: { freeTier: ReadonlySet<string>; ranks: ReadonlyMap<string, number>; context: MarketContext },
): AssetRisk {
  const has = (m: ModelKey) => asset.models.includes(m);
  const crypto = asset.asset_class === 'CRYPTO';
  const gravityPage = crypto ? pages.crypto_gravity : pages.equity_twap;
  const pick = <K extends keyof Carried>(key: K, fresh: NonNullable<Carried[K]> | null): NonNullable<Carried[K]> | null =>
    fresh ?? carried[key] ?? null;

  const price: PriceOut = gravityPage?.price
    ? { value: gravityPage.price.value, currency: 'USD', source_page: gravityPage.price.source_page }
    : (carried.price ?? { value: null, currency: 'USD', source_page: null });

  let twap: TwapOut | null = null;
  if (has('twap')) {
    const base = gravityPage?.twap;
    const risk = pages.crypto_twap_risk?.twap_risk;
    if (base) {
      twap = {
        baseline: base.baseline,
        premium_pct: base.premium_pct,
        risk_level: risk?.risk_level ?? null,
        risk_level_model: risk?.risk_level != null ? risk.risk_level_model : null,
        ...stamp(base),
      };
    } else if (carried.twap) {
      twap = {
        ...carried.twap,
        ...(risk ? { risk_level: risk.risk_level, risk_level_model: risk.risk_level != null ? risk.risk_level_model : null } : {}),
      };
    }
  }

  const readings = {
    asset_class: asset.asset_class,
    gravity: has('gravity') ? pick('gravity', gravityOut(gravityPage)) : null,
    twap,
    sma_composite: has('sma_composite') ? pick('sma_composite', smaOut(crypto ? pages.crypto_sma_20w : pages.equity_sma_composite)) : null,
    phase: has('phase') ? pick('phase', phaseOut(crypto ? pages.crypto_phase : pages.equity_valuation)) : null,
    dca: has('dca') ? pick('dca', dcaOut(pages.dca_regression)) : null,
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
