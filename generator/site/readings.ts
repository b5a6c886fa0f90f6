/** What a page parser returns: readings under the API's own names, validated with zod. */
import { z } from 'zod';
import { PageError } from './errors.js';
import type { PageIdentity } from './html.js';

export const AS_OF = z.string().regex(/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:00Z)?$/, 'a date or an ISO 8601 UTC minute');
export const BASIS = z.enum(['page_stamp', 'trace_end', 'feed_generated_at']);
const num = z.number().finite();
const numOrNull = num.nullable();
const stamped = { as_of: AS_OF, as_of_basis: BASIS, model: z.string().regex(/^[a-z0-9_]+@\d+$/), source_page: z.string() };

export const GravityReading = z.object({
  score: num.min(0).max(100),
  risk_level: z.number().int().min(1).max(10),
  verdict: z.string(),
  ...stamped,
});
export const TwapReading = z.object({ baseline: numOrNull, premium_pct: numOrNull, ...stamped });
export const TwapRiskReading = z.object({
  risk_level: z.number().int().min(1).max(10).nullable(),
  risk_level_model: z.string(),
  ...stamped,
});
export const PriceReading = z.object({
  value: numOrNull,
  currency: z.literal('USD'),
  source_page: z.string().nullable(),
  date: z.string(),
});
export const SmaReading = z.object({
  score: num.min(0).max(100),
  page_value: num.min(0).max(1),
  band: z.string().regex(/^\d\.\d-\d\.\d$/),
  ...stamped,
});
export const PhaseReading = z.object({
  label: z.string(),
  completion_pct: numOrNull,
  fair_value: numOrNull,
  max_euphoria_target: numOrNull,
  ...stamped,
});
export const DcaReading = z.object({
  band: z.string().regex(/^\d\.\d-\d\.\d$/),
  risk: num.min(0).max(1),
  price: numOrNull,
  fair_value: numOrNull,
  floor: numOrNull,
  ceiling: numOrNull,
  premium_pct: numOrNull,
  premium_source: z.enum(['printed', 'derived', 'unavailable']),
  reading_date: z.string().nullable(),
  ...stamped,
});
const context = { model: z.string(), as_of: AS_OF.nullable(), as_of_basis: BASIS, source_page: z.string() };
export const FearGreedReading = z.object({
  value: numOrNull,
  label: z.string().nullable(),
  label_source: z.enum(['site_band_table', 'engine']),
  sma_30: numOrNull,
  provider: z.string(),
  scope: z.enum(['market', 'sector']),
  ...context,
});
export const PeakValleyReading = z.object({
  score: numOrNull,
  zone: z.string().nullable(),
  series: z.string(),
  scope: z.enum(['market', 'sector']),
  ...context,
});
export const MacroRiskReading = z.object({ score: numOrNull, status: z.string().nullable(), scope: z.string(), ...context });

export type GravityReading = z.infer<typeof GravityReading>;
export type TwapReading = z.infer<typeof TwapReading>;
export type TwapRiskReading = z.infer<typeof TwapRiskReading>;
export type PriceReading = z.infer<typeof PriceReading>;
export type SmaReading = z.infer<typeof SmaReading>;
export type PhaseReading = z.infer<typeof PhaseReading>;
export type DcaReading = z.infer<typeof DcaReading>;
export type FearGreedReading = z.infer<typeof FearGreedReading>;
export type PeakValleyReading = z.infer<typeof PeakValleyReading>;
export type MacroRiskReading = z.infer<typeof MacroRiskReading>;

/** Columns of a weekly_archive row that a page's own series carry (site-format 8.8). */
export const ARCHIVE_FIELDS = [
  'price',
  'gravity',
  'sma_composite',
  'twap_premium_pct',
  'twap_risk_level',
  'dca_premium_pct',
  'dca_risk',
  'dca_band',
] as const;
export type ArchiveField = (typeof ARCHIVE_FIELDS)[number];
/** Week label (the Sunday closing the week) to the values one page carries for that week. */
export type Archive = Record<string, Partial<Record<ArchiveField, number | string | null>>>;

export interface SectorReadings {
  fear_greed: FearGreedReading;
  peak_valley: PeakValleyReading;
  macro_risk: MacroRiskReading;
}

/** Everything one page yields. Asset pages name their symbol; market pages name a universe or none. */
export interface PageResult {
  file: string;
  kind: PageKind;
  symbol: string | null;
  gravity?: GravityReading;
  twap?: TwapReading;
  twap_risk?: TwapRiskReading;
  price?: PriceReading;
  sma_composite?: SmaReading;
  phase?: PhaseReading;
  dca?: DcaReading;
  fear_greed?: FearGreedReading;
  peak_valley?: PeakValleyReading;
  /** Sector indicators by universe (the feed holds several, a widget one). */
  sectors?: Record<string, SectorReadings>;
  ranking?: { symbol: string; rank: number }[];
  archive?: Archive;
  /** How an asset page names its asset (title, breadcrumb, headers), checked against its file name by the build. */
  identity?: PageIdentity;
}

export const PAGE_KINDS = [
  'crypto_gravity',
  'crypto_twap_risk',
  'crypto_sma_20w',
  'crypto_phase',
  'dca_regression',
  'equity_twap',
  'equity_sma_composite',
  'equity_valuation',
  'crypto_fear_greed',
  'crypto_peak_valley',
  'sector_feed',
  'sector_widget',
  'market_cap_ranking',
] as const;
export type PageKind = (typeof PAGE_KINDS)[number];

/** Validate with zod, turning a failure into an error that names the file and the field. */
export function validated<T>(schema: z.ZodType<T>, value: unknown, file: string, what: string): T {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const at = issue.path.reduce<unknown>((v, k) => (v as Record<PropertyKey, unknown> | undefined)?.[k as PropertyKey], value);
  throw new PageError(file, [what, ...issue.path].join('.'), `${issue.message} (found ${JSON.stringify(at)})`);
}
