/**
 * The readings pages yield, registered once (decision 103): each one's schema, and for a reading of one asset the
 * AssetRisk field it fills, the catalogue model an asset lists to have it, what it serves and what it carries from
 * the previous tree when its page fails under --keep-going. The kinds (registry.ts) say which pages yield which
 * readings; discovery, the assembly of AssetRisk (api/asset-risk.ts), the carry, the report's words and the
 * missing-page warning derive from this table. Adding a reading is a line here (and, for a new AssetRisk field, the
 * field in contract/shapes.ts: the compiler asks for it).
 */
import { z } from 'zod';
import type { ModelKey } from '../contract/constants.js';
import {
  type AssetRisk,
  Dca,
  FearGreed,
  Gravity,
  HistoryRow,
  MacroRisk,
  PeakValley,
  Phase,
  Price,
  SmaComposite,
  Twap,
} from '../contract/shapes.js';
import { PageError } from './errors.js';
import type { PageIdentity } from './html.js';
import type { PageKind } from './registry.js';

/** The value of an AssetRisk field, when it has one. */
type FieldValue<F extends keyof AssetRisk> = NonNullable<AssetRisk[F]>;

/**
 * A reading of one asset. The first reading registered for a field makes it; a later one (`part`) adds its keys to
 * the field the first made, and is nothing without it.
 */
export interface AssetReading<S extends z.ZodType = z.ZodType, F extends keyof AssetRisk = keyof AssetRisk> {
  scope: 'asset';
  schema: S;
  /** The AssetRisk field it fills. */
  field: F;
  /**
   * The catalogue model an asset lists to have it (its field is null for an asset that does not), or null: a reading
   * of its own, which every asset whose class publishes its page has. A page is expected of an asset that has one of
   * its readings.
   */
  model: ModelKey | null;
  /** What of the field it serves, from the page's reading. */
  serve: (reading: z.infer<S>) => Partial<FieldValue<F>>;
  /** What of the previous tree's field it carries when its page failed under --keep-going. */
  carry: (previous: FieldValue<F>) => Partial<FieldValue<F>>;
  /** The field when no page gave it and nothing was carried (a part: its keys then). */
  none: AssetRisk[F] | Partial<FieldValue<F>>;
  /** Adds to the field another reading makes. */
  part?: true;
}

/** A market-wide reading: its page is one of the market's, and market-readings.ts says where it goes and how it is carried. */
export interface MarketReading<S extends z.ZodType = z.ZodType> {
  scope: 'market';
  schema: S;
  /** How the report and the warnings name it. */
  label: string;
}

/** A reading that fills a field whole: served and carried as it is, null without a page. */
function whole<F extends keyof AssetRisk, S extends z.ZodType<Partial<FieldValue<F>>>>(
  field: F,
  schema: S,
  model: ModelKey | null,
): AssetReading<S, F> {
  return { scope: 'asset', schema, field, model, serve: (r) => r, carry: (prev) => prev, none: null as AssetRisk[F] };
}
const typed = <S extends z.ZodType, F extends keyof AssetRisk>(r: AssetReading<S, F>) => r;
const market = <S extends z.ZodType>(schema: S, label: string): MarketReading<S> => ({ scope: 'market', schema, label });

const TwapBaseline = Twap.omit({ risk_level: true, risk_level_model: true });
const TwapRisk = Twap.pick({ risk_level: true, as_of: true, as_of_basis: true, model: true, source_page: true }).extend({
  risk_level_model: Twap.shape.model,
});
/** The price, with the date of the point it was read at (the ledger's and the guard's, not the API's). */
const DatedPrice = Price.extend({ date: z.string() });
const Sectors = z.record(z.string(), z.object({ fear_greed: FearGreed, peak_valley: PeakValley, macro_risk: MacroRisk }));
const Ranking = z.array(z.object({ symbol: z.string(), rank: z.number().int().min(1) }));

export const READINGS = {
  price: typed({
    scope: 'asset',
    schema: DatedPrice,
    field: 'price',
    model: null,
    serve: ({ value, currency, source_page }) => ({ value, currency, source_page }),
    carry: (prev) => prev,
    none: { value: null, currency: 'USD', source_page: null },
  }),
  gravity: whole('gravity', Gravity, 'gravity'),
  /** The TWAP page gives the baseline and premium; the risk level comes from another page (twap_risk), a separate model. */
  twap: typed({
    scope: 'asset',
    schema: TwapBaseline,
    field: 'twap',
    model: 'twap',
    serve: (r) => r,
    carry: ({ risk_level: _l, risk_level_model: _m, ...baseline }) => baseline,
    none: null,
  }),
  twap_risk: typed({
    scope: 'asset',
    schema: TwapRisk,
    field: 'twap',
    model: 'twap',
    part: true,
    serve: ({ risk_level, risk_level_model }) => ({ risk_level, risk_level_model: risk_level !== null ? risk_level_model : null }),
    carry: ({ risk_level, risk_level_model }) => ({ risk_level, risk_level_model }),
    none: { risk_level: null, risk_level_model: null },
  }),
  sma_composite: whole('sma_composite', SmaComposite, 'sma_composite'),
  phase: whole('phase', Phase, 'phase'),
  dca: whole('dca', Dca, 'dca'),
  fear_greed: market(FearGreed, 'crypto fear & greed'),
  peak_valley: market(PeakValley, 'crypto peak/valley'),
  /** Sector indicators by universe (the feed holds several, a widget one). */
  sectors: market(Sectors, 'sector indicators'),
  ranking: market(Ranking, 'market-cap ranking'),
};

/** The readings pages yield, under the API's names (a page yields some of them; see each kind's `readings`). */
export type Readings = { [K in keyof typeof READINGS]: z.infer<(typeof READINGS)[K]['schema']> };
export type ReadingKey = keyof Readings;

// The parsers validate with these: what a parser validates is what is served.
export const GravityReading = READINGS.gravity.schema;
export const SmaReading = READINGS.sma_composite.schema;
export const PhaseReading = READINGS.phase.schema;
export const DcaReading = READINGS.dca.schema;
export const FearGreedReading = READINGS.fear_greed.schema;
export const PeakValleyReading = READINGS.peak_valley.schema;
export const MacroRiskReading = MacroRisk;
export const TwapReading = READINGS.twap.schema;
export const TwapRiskReading = READINGS.twap_risk.schema;
export const PriceReading = READINGS.price.schema;

export type GravityReading = Readings['gravity'];
export type TwapReading = Readings['twap'];
export type TwapRiskReading = Readings['twap_risk'];
export type PriceReading = Readings['price'];
export type SmaReading = Readings['sma_composite'];
export type PhaseReading = Readings['phase'];
export type DcaReading = Readings['dca'];
export type FearGreedReading = Readings['fear_greed'];
export type PeakValleyReading = Readings['peak_valley'];
export type MacroRiskReading = z.infer<typeof MacroRisk>;
export type SectorReadings = Readings['sectors'][string];

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
