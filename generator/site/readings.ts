/** What a page parser returns: readings under the API's own names, validated with zod. */
import { z } from 'zod';
import { Dca, FearGreed, Gravity, HistoryRow, MacroRisk, PeakValley, Phase, Price, SmaComposite, Twap } from '../contract/shapes.js';
import { PageError } from './errors.js';
import type { PageIdentity } from './html.js';
import type { PageKind } from './registry.js';

// A page's reading is the API's model object itself (contract/shapes.ts): what a parser validates is what is served.
export const GravityReading = Gravity;
export const SmaReading = SmaComposite;
export const PhaseReading = Phase;
export const DcaReading = Dca;
export const FearGreedReading = FearGreed;
export const PeakValleyReading = PeakValley;
export const MacroRiskReading = MacroRisk;
/** The TWAP page gives the baseline and premium; the risk level comes from another page (TwapRiskReading). */
export const TwapReading = Twap.omit({ risk_level: true, risk_level_model: true });
export const TwapRiskReading = Twap.pick({ risk_level: true, as_of: true, as_of_basis: true, model: true, source_page: true }).extend({
  risk_level_model: Twap.shape.model,
});
/** The price, with the date of the point it was read at (the ledger's, not the API's). */
export const PriceReading = Price.extend({ date: z.string() });

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

/** Columns of a weekly_archive row that a page's own series carry (decision 46). */
const ARCHIVE_FIELDS = [
  'price',
  'gravity',
  'sma_composite',
  'twap_premium_pct',
  'twap_risk_level',
  'dca_premium_pct',
  'dca_risk',
  'dca_band',
] as const satisfies readonly (keyof HistoryRow)[];
type ArchiveField = (typeof ARCHIVE_FIELDS)[number];
/** An archive row's columns as the ledger publishes them, scales included. */
const ArchiveRow = HistoryRow.pick(Object.fromEntries(ARCHIVE_FIELDS.map((f) => [f, true])) as Record<ArchiveField, true>).partial();
/** Week label (the Sunday closing the week) to the values one page carries for that week. */
export type Archive = Record<string, Partial<Record<ArchiveField, number | string | null>>>;

export interface SectorReadings {
  fear_greed: FearGreedReading;
  peak_valley: PeakValleyReading;
  macro_risk: MacroRiskReading;
}

/** The readings pages yield, under the API's names (a page yields some of them; see each kind's `readings`). */
export interface Readings {
  gravity: GravityReading;
  twap: TwapReading;
  twap_risk: TwapRiskReading;
  price: PriceReading;
  sma_composite: SmaReading;
  phase: PhaseReading;
  dca: DcaReading;
  fear_greed: FearGreedReading;
  peak_valley: PeakValleyReading;
  /** Sector indicators by universe (the feed holds several, a widget one). */
  sectors: Record<string, SectorReadings>;
  ranking: { symbol: string; rank: number }[];
}
export type ReadingKey = keyof Readings;

/** What a parser returns: some readings, the weekly archive when asked for, how the page names its asset. */
export type ParsedPage = Partial<Readings> & {
  archive?: Archive;
  /** How an asset page names its asset (title, breadcrumb, headers), checked against its file name by the build. */
  identity?: PageIdentity;
};
/** What the parser of a kind yielding `R` returns: every one of them. */
export type Parsed<R extends ReadingKey> = Pick<Readings, R> & ParsedPage;

/** Everything one page yields, with the page it was read from. Asset pages name their symbol; market pages none. */
export type PageResult = Partial<Readings> & {
  file: string;
  kind: PageKind;
  symbol: string | null;
  archive?: Archive;
  identity?: PageIdentity;
};

/** Validate with zod, turning a failure into an error that names the file and the field. */
export function validated<T>(schema: z.ZodType<T>, value: unknown, file: string, what: string): T {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const at = issue.path.reduce<unknown>((v, k) => (v as Record<PropertyKey, unknown> | undefined)?.[k as PropertyKey], value);
  throw new PageError(file, [what, ...issue.path].join('.'), `${issue.message} (found ${JSON.stringify(at)})`);
}

/** A page's weekly archive, each row checked as the ledger will publish it: a value off its scale makes the page unreadable. */
export function validatedArchive(archive: Archive, file: string): Archive {
  for (const [week, row] of Object.entries(archive)) validated(ArchiveRow, row, file, `archive.${week}`);
  return archive;
}
