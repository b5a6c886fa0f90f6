/** Constants of the API contract, shared by the generator and the shim (no runtime imports). */
export const UNIVERSES = ['ai_infrastructure', 'bitcoin_equities', 'crypto', 'quantum', 'us_stock_market'] as const;
export type Universe = (typeof UNIVERSES)[number];
export const MODEL_KEYS = ['dca', 'gravity', 'phase', 'sma_composite', 'twap'] as const;
export type ModelKey = (typeof MODEL_KEYS)[number];
/**
 * What the change feed tracks (decision 34): per AssetRisk key, the one field whose move is an event; per market
 * context reading, likewise. A score moving within its band or level is not an event.
 */
export const TRACKED_ASSET_FIELDS = {
  gravity: 'risk_level',
  twap: 'risk_level',
  sma_composite: 'band',
  phase: 'label',
  dca: 'band',
} as const satisfies Record<ModelKey, string>;
export const TRACKED_UNIVERSE_FIELDS = { fear_greed: 'label', peak_valley: 'zone', macro_risk: 'status' } as const;
/** Every event's `field`: the tracked readings, free-tier and catalogue membership, and each model's staleness. */
export const CHANGE_FIELDS = [
  ...Object.entries(TRACKED_ASSET_FIELDS).map(([k, f]) => `${k}.${f}`),
  ...Object.entries(TRACKED_UNIVERSE_FIELDS).map(([k, f]) => `${k}.${f}`),
  'free_tier',
  'catalogue',
  ...MODEL_KEYS.map((k) => `stale_models.${k}`),
] as const as readonly string[];
/** Spec: the symbol path parameter, 1 to 20 letters, digits, underscore, period, hyphen. */
export const SYMBOL_PATTERN = /^[A-Za-z0-9_.-]{1,20}$/;
/**
 * A symbol is a name, never a path (decision 101): the spec's pattern, not starting with a dot. `.` and `..` would
 * name the folder itself or its parent in `assets/<SYMBOL>/`, and `.X` a hidden folder, which `check`, a static host
 * and a copy with shell globs all pass over. The one rule wherever a symbol meets a path: the catalogue's loader, and
 * the contract's shapes of AssetRisk and of the tree's `_catalog.json`, which `check` holds a tree to.
 */
export const SYMBOL_NAME = /^(?!\.)[A-Za-z0-9_.-]{1,20}$/;
/** How a refusal says what a symbol must be. */
export const SYMBOL_RULE = '1 to 20 letters, digits, _ . -, not starting with a dot';
/** The most assets a catalogue (so a list, a summary, a count of them) may hold. */
export const MAX_ASSETS = 10_000;
/** The shape a universe name must have before it is looked up (decision 9: bad_universe otherwise). */
export const UNIVERSE_PATTERN = /^[A-Za-z0-9_-]{1,40}$/;

export const DISCLAIMER =
  'Educational use only. These are descriptive statistics on past prices, read from published model pages; they are not investment advice, a recommendation, or a solicitation to buy or sell any asset.';
export const API_VERSION = '1.0.0';

/** Gravity's four bands by score, lowest first: accumulation < 25 <= mid_cycle < 50 <= late_cycle < 75 <= cycle_top. */
export const GRAVITY_BANDS = ['accumulation', 'mid_cycle', 'late_cycle', 'cycle_top'] as const;
export type GravityBand = (typeof GRAVITY_BANDS)[number];
const GRAVITY_EDGES = [25, 50, 75];
/** The index of a score's band in GRAVITY_BANDS (0 to 3): the site's verdicts and the summaries' counts share it. */
export const gravityBandIndex = (score: number): number => GRAVITY_EDGES.filter((edge) => score >= edge).length;
