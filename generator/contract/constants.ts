/** Constants of the API contract, shared by the generator and the shim (no runtime imports). */
export const UNIVERSES = ['ai_infrastructure', 'bitcoin_equities', 'crypto', 'quantum', 'us_stock_market'] as const;
export type Universe = (typeof UNIVERSES)[number];
export const MODEL_KEYS = ['dca', 'gravity', 'phase', 'sma_composite', 'twap'] as const;
export type ModelKey = (typeof MODEL_KEYS)[number];
/** Spec: the symbol path parameter, 1 to 20 letters, digits, underscore, period, hyphen. */
export const SYMBOL_PATTERN = /^[A-Za-z0-9_.\-]{1,20}$/;
/** The shape a universe name must have before it is looked up (decision 9: bad_universe otherwise). */
export const UNIVERSE_PATTERN = /^[A-Za-z0-9_\-]{1,40}$/;

export const DISCLAIMER =
  'Educational use only. These are descriptive statistics on past prices, read from published model pages; they are not investment advice, a recommendation, or a solicitation to buy or sell any asset.';
export const API_VERSION = '1.0.0';
