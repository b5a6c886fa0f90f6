/**
 * Every shape the API and its files have, defined once with zod: the page parsers validate their readings with
 * these, the build's TypeScript types are their `z.infer`, the OpenAPI document's `components.schemas` and the
 * internal files' schemas are generated from them (openapi/schemas.ts), and the shim reads the shared files as
 * these types. Field order here is the order of the keys in every file the build writes.
 *
 * Kept out of the contract's index: the shim imports these as types only, so its bundle carries none of this.
 * The key store, which the shim does parse at run time, has its own small shape (keys.ts, zod/mini).
 */
import { z } from 'zod';
import {
  API_VERSION,
  DISCLAIMER,
  MAX_ASSETS,
  MODEL_KEYS,
  SYMBOL_NAME,
  TRACKED_ASSET_FIELDS,
  TRACKED_UNIVERSE_FIELDS,
  UNIVERSES,
} from './constants.js';
import { ERROR_STATUS, type ErrorCode } from './errors.js';
import { BULK_MAX_SYMBOLS, FREE_TIER_RULE, HISTORY_MAX_LIMIT, KEY_LIMIT_MAX, PLAN_LIMITS, PLANS } from './plans.js';
import { ENCODINGS } from './encodings.js';
import {
  WEBHOOK_DESCRIPTION_MAX,
  WEBHOOK_ENDPOINTS,
  WEBHOOK_FIELDS,
  WEBHOOK_ATTEMPTS_KEPT,
  WEBHOOK_ATTEMPT_MS_MAX,
  WEBHOOK_FILTER_MAX,
  WEBHOOK_RETRY_MS,
  WEBHOOK_MESSAGE_EVENTS,
  WEBHOOK_URL_MAX,
} from './webhooks.js';

/** The schemas with a name: public ones become `components.schemas`, internal ones describe the tree's own files. */
export const SHAPES = z.registry<{ id: string }>();
/** The ids of the internal ones. */
export const INTERNAL_IDS = new Set<string>();
/** The ids of the request bodies: what the gateway accepts, every member named (the served document keeps them closed). */
export const REQUEST_IDS = new Set<string>();
const api = <T extends z.ZodType>(id: string, schema: T): T => (SHAPES.add(schema, { id }), schema);

const AS_OF_RE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:00Z)?$/;
const MODEL_RE = /^[a-z0-9_]+@\d+$/;
const BAND_RE = /^\d\.\d-\d\.\d$/;
/** A date or an ISO 8601 UTC minute: when a page was published. */
const asOf = () => z.string().regex(AS_OF_RE, 'a date or an ISO 8601 UTC minute');
/** A symbol: a name, never a path (decision 101). */
const symbolName = () => z.string().regex(SYMBOL_NAME);
const modelName = () => z.string().regex(MODEL_RE, 'a model name@version');
// Every other number the API publishes has its bounds stated here too, once (decision 101): a price or a regression
// line is a positive number of dollars no asset the site covers comes near the top of, a premium is above -100% (the
// price is positive) and at most PREMIUM_MAX_PCT, a count or a rank an integer within what the tree can hold. A page printing one outside them is unreadable and `check` refuses a tree holding one, as for the scales.
/** The most a price or a regression line may be, in USD a unit: BTC's highest line is under 1e6; a page's 1e308 is no price. */
export const USD_MAX = 1e9;
/** A price or a regression line (fair value, floor, ceiling, target, baseline) in USD a unit: above 0, at most USD_MAX. */
const usd = () => z.number().positive().max(USD_MAX);
const usdOrNull = () => usd().nullable();
/**
 * The most a premium may be, in percent of its baseline: a price a thousand and one times its lifetime average or its
 * regression line. The site's premiums run from about -97% (a coin far below its TWAP) to a few hundred percent.
 */
export const PREMIUM_MAX_PCT = 100_000;
/** A signed premium or discount, in percent of a baseline: above -100 (the price is positive), at most PREMIUM_MAX_PCT. */
const premium = () => z.number().gt(-100).max(PREMIUM_MAX_PCT);
const premiumOrNull = () => premium().nullable();
/** The most rows one asset's ledger may hold: a row a day for more than 270 years. */
const MAX_LEDGER_ROWS = 100_000;
/** The most events the change feed may hold: its cursor is at most ten digits. */
const MAX_EVENTS = 10_000_000_000;
/** The most requests a window of a caller's may count (the quota's stores may count past a limit while one is away). */
const MAX_REQUESTS = 1_000_000_000;
/** The highest per-minute and per-month limits in effect: a key's own may exceed its plan's (decision 106). */
const MOST = KEY_LIMIT_MAX;
/** A market-cap rank: 1 is the largest; no ranking lists a hundred thousand coins. */
export const MarketCapRank = z.number().int().min(1).max(100_000);
/** An integer from 0 to `max`. */
const count = (max: number) => z.number().int().min(0).max(max);
// The spec's three scales (its Models table), each stated once: every field that carries one is built from these,
// so the bounds reach the served document (`minimum`/`maximum`), and the parsers and `check` refuse a value outside
// them: a page printing one is unreadable, never published (decision 62).
/** A risk level or band index, 1-10. */
const level = () => z.number().int().min(1).max(10);
/** A 0-1 scale (risk as a page prints it, a share). */
const fraction = () => z.number().min(0).max(1);
/** A 0-100 scale (scores, percentiles of a band, a phase's completion). */
const score = () => z.number().min(0).max(100);
/** A reading on a 0-100 scale that a page may not print (null). */
const scoreOrNull = () => score().nullable();
const date = () => z.iso.date();
const assetClass = () => z.enum(['CRYPTO', 'EQUITY']);
const modelKeys = () => z.array(z.enum(MODEL_KEYS));

export const Disclaimer = api('Disclaimer', z.literal(DISCLAIMER));
export const AsOfBasis = api('AsOfBasis', z.enum(['page_stamp', 'trace_end', 'feed_generated_at']));
export const ModelVersion = api(
  'ModelVersion',
  z
    .record(z.string().regex(/^[a-z0-9_]+$/), z.string().regex(/^\d+$/))
    .nullable()
    .describe(
      'One entry per model that produced a reading in the response, keyed by the model name without its version; null only where the response holds no reading.',
    ),
);
export const Universe = api('Universe', z.enum(UNIVERSES));
export const Band = api('Band', z.string().regex(BAND_RE, 'a tenth band a-b').describe('Tenth band a-b.'));
/** The regression's levels around a DCA band: the AssetRisk reading and the signal's state both carry them. */
const dcaLevels = {
  price: usdOrNull(),
  fair_value: usdOrNull(),
  floor: usdOrNull(),
  ceiling: usdOrNull(),
  premium_pct: premiumOrNull(),
  premium_source: z.enum(['printed', 'derived', 'unavailable']),
};

/** Where a model reading comes from: the page, when it was published, and the model that made it. */
const stamped = {
  // The spec: "as_of (string or null, when that reading was published)"; the build refuses a page it cannot date,
  // but a client must take a null as the spec allows one.
  as_of: asOf()
    .nullable()
    .describe(
      'When the page this reading was read from was published: its printed stamp (UTC, to the minute) or, for trace_end, the date of its last data point.',
    ),
  as_of_basis: AsOfBasis,
  model: modelName(),
  source_page: z.string().describe('File name of the published page the reading was read from.'),
};
/** The same for market context, whose feed may carry no time. */
const contextStamp = { model: modelName(), as_of: asOf().nullable(), as_of_basis: AsOfBasis, source_page: z.string() };

export const Price = api('Price', z.object({ value: usdOrNull(), currency: z.literal('USD'), source_page: z.string().nullable() }));
export const Gravity = api('Gravity', z.object({ score: score(), risk_level: level(), verdict: z.string(), ...stamped }));
export const Twap = api(
  'Twap',
  z.object({
    baseline: usdOrNull(),
    premium_pct: premiumOrNull().describe('Signed percentage of the baseline, not of price.'),
    risk_level: level().nullable().describe('Crypto only: a separate 1-10 model, not the Gravity level.'),
    risk_level_model: modelName().nullable(),
    ...stamped,
  }),
);
export const SmaComposite = api('SmaComposite', z.object({ score: score(), page_value: fraction(), band: Band, ...stamped }));
export const Phase = api(
  'Phase',
  z.object({
    label: z.string(),
    completion_pct: scoreOrNull().describe('Position between the -3 and +3 sigma bands, 0-100; not elapsed time.'),
    fair_value: usdOrNull(),
    max_euphoria_target: usdOrNull(),
    ...stamped,
  }),
);
export const Dca = api(
  'Dca',
  z
    .object({
      band: Band,
      risk: fraction(),
      ...dcaLevels,
      reading_date: date().nullable(),
      ...stamped,
    })
    .describe('Publishes a band, never a position size.'),
);
const scope = () => z.enum(['market', 'sector']);
export const FearGreed = api(
  'FearGreed',
  z.object({
    value: scoreOrNull(),
    label: z.string().nullable(),
    label_source: z.enum(['site_band_table', 'engine']),
    sma_30: scoreOrNull(),
    provider: z.string(),
    scope: scope(),
    ...contextStamp,
  }),
);
export const PeakValley = api(
  'PeakValley',
  z.object({
    score: scoreOrNull(),
    zone: z.string().nullable(),
    series: z.string().describe('The series the score is read from: leading_btc_eth (crypto), leading_sector (equity sectors).'),
    scope: scope(),
    ...contextStamp,
  }),
);
export const MacroRisk = api(
  'MacroRisk',
  z.object({ score: scoreOrNull(), status: z.string().nullable(), scope: z.string(), ...contextStamp }),
);
export const MarketContext = api(
  'MarketContext',
  z
    .object({ universe: Universe, fear_greed: FearGreed.nullable(), peak_valley: PeakValley.nullable(), macro_risk: MacroRisk.nullable() })
    .describe('Market-wide (crypto) or sector-wide (equity universes), never per asset.'),
);

export const AssetRisk = api(
  'AssetRisk',
  z.object({
    symbol: symbolName(),
    name: z.string(),
    asset_class: assetClass(),
    universes: z.array(Universe).min(1),
    as_of: asOf().nullable().describe("Newest daily reading across the asset's models (weekly readings do not count)."),
    free_tier: z.boolean(),
    market_cap_rank: MarketCapRank.nullable(),
    price: Price,
    gravity: Gravity.nullable(),
    twap: Twap.nullable(),
    sma_composite: SmaComposite.nullable(),
    phase: Phase.nullable(),
    dca: Dca.nullable(),
    market_context: MarketContext,
    stale_models: modelKeys().describe("AssetRisk keys of readings more than three days behind the asset's newest page, sorted."),
  }),
);
export const AssetListEntry = api(
  'AssetListEntry',
  z.object({
    symbol: z.string(),
    name: z.string(),
    asset_class: assetClass(),
    universes: z.array(Universe),
    free_tier: z.boolean(),
    as_of: asOf().nullable(),
    models: modelKeys(),
    pages: z.record(z.string(), z.string()).describe('Page kind to the file name of the page read.'),
  }),
);
export const AssetList = api(
  'AssetList',
  z
    .object({
      assets: z.array(AssetListEntry),
      universes: z.record(z.string(), z.array(z.string())),
      free_tier: z.object({ rule: z.literal(FREE_TIER_RULE), symbols: z.array(z.string()) }),
      asset_count: count(MAX_ASSETS),
      total_asset_count: count(MAX_ASSETS),
      tier: z.enum(PLANS).describe('The plan whose list this is.'),
    })
    .describe('A basic caller sees only the free-tier assets, with total_asset_count the whole catalogue.'),
);
export const HistoryRow = api(
  'HistoryRow',
  z.object({
    date: date(),
    basis: z.enum(['as_published', 'weekly_archive']),
    price: usdOrNull(),
    gravity: scoreOrNull(),
    sma_composite: scoreOrNull(),
    phase_completion_pct: scoreOrNull(),
    twap_premium_pct: premiumOrNull(),
    twap_risk_level: level().nullable(),
    dca_premium_pct: premiumOrNull(),
    dca_risk: fraction().nullable(),
    dca_band: z.string().regex(BAND_RE).nullable(),
  }),
);
export const History = api(
  'History',
  z.object({
    symbol: z.string(),
    cadence: z.string(),
    from: date().nullable().describe('Date of the first row of this page.'),
    through: date().nullable().describe('Date of the last row of this page.'),
    row_count: count(HISTORY_MAX_LIMIT),
    total_row_count: count(MAX_LEDGER_ROWS).describe('Rows within the from/to window, across all pages.'),
    limit: z.number().int().min(1).max(HISTORY_MAX_LIMIT),
    max_limit: z.literal([...new Set(PLANS.map((p) => PLAN_LIMITS[p].historyCap))]),
    next_cursor: date().nullable().describe('Pass as cursor for the next page; null on the last page.'),
    rows: z.array(HistoryRow),
  }),
);
export const Bulk = api(
  'Bulk',
  z.object({
    assets: z.record(z.string(), AssetRisk),
    requested: z.array(z.string()),
    missing: z.array(z.string()),
    count: count(BULK_MAX_SYMBOLS),
  }),
);
const ranked = () => z.array(z.object({ symbol: z.string(), score: score() })).max(5);
export const Summary = api(
  'Summary',
  z
    .object({
      universe: Universe,
      asset_count: count(MAX_ASSETS),
      gravity: z.object({
        median: scoreOrNull(),
        mean: scoreOrNull(),
        bands: z
          .object({
            accumulation: count(MAX_ASSETS),
            mid_cycle: count(MAX_ASSETS),
            late_cycle: count(MAX_ASSETS),
            cycle_top: count(MAX_ASSETS),
          })
          .describe('Accumulation s < 25, mid_cycle 25 <= s < 50, late_cycle 50 <= s < 75, cycle_top s >= 75.'),
        lowest: ranked(),
        highest: ranked(),
      }),
      twap_premium_pct: z.object({ median: premiumOrNull(), share_above_twap: fraction().nullable() }),
      sma_composite: z.object({ median: scoreOrNull() }),
      barometer: z.object({
        peak_valley: z.object({ score: scoreOrNull(), zone: z.string().nullable(), scope: z.string() }).nullable(),
        fear_greed: z.object({ value: scoreOrNull(), label: z.string().nullable(), provider: z.string() }).nullable(),
      }),
    })
    .describe('Counts are always integers; a median, mean or share with nothing to aggregate is null.'),
);
export const DcaSignal = api(
  'DcaSignal',
  z.object({
    symbol: z.string(),
    free_tier: z.boolean(),
    as_of: date(),
    reading_date: date(),
    state: z.object({
      band: Band,
      risk: fraction(),
      band_label: z.string(),
      ...dcaLevels,
    }),
    // Always null, described as a number that is null (decision 107): a schema typed `null` alone becomes a TypeScript
    // property typed `null`, which openapi-fetch 0.17's response type drops (openapi-typescript #2717); `const`
    // still admits null only.
    multiplier: z
      .null()
      .meta({ type: ['number', 'null'], const: null })
      .describe('Always null: the model publishes a band, not a sizing rule (multiplier_note says so).'),
    multiplier_note: z.string(),
    model: z.literal('dca_regression@1'),
    source_page: z.string(),
  }),
);
export const Health = api(
  'Health',
  z.object({
    status: z
      .enum(['ok', 'stale'])
      .describe("Stale once newest_reading is older than the gateway's limit (36 hours unless configured); the status code stays 200."),
    api_version: z.literal(API_VERSION),
    render_version: z.string(),
    schema: z.number().int().min(1).max(99).describe("The health document's own version."),
    disclaimer: Disclaimer,
    built_at: z.iso.datetime().describe('When the served tree was built.'),
    newest_reading: asOf().nullable().describe('The newest as_of in the served tree.'),
  }),
);
/**
 * A change-feed event (decision 34), one shape per type of value its `field` moves, discriminated by `field`: a
 * generated client narrows an event by its field to the type of its from/to without a cast. The fields of each
 * shape come from the contract's constants (what the feed tracks). The fields every event shares keep one type in
 * every shape (`symbol`, `universe` and `model` nullable), so code over any event reads them without narrowing:
 * a property typed only `null` is dropped from response types by some clients (openapi-fetch 0.17's `Readable`).
 * Keys are in the order every event is written.
 */
const event = <V extends z.ZodType>(fields: [string, ...string[]], value: V, about: string) =>
  z
    .object({
      published_at: z.iso.datetime().describe('When the refresh that raised the event was published.'),
      symbol: z.string().nullable().describe("The asset; null for a universe's event."),
      universe: Universe.nullable().describe("The universe; null for an asset's event."),
      field: z.enum(fields),
      from: value.describe('The value before the refresh.'),
      to: value.describe('The value after it.'),
      model: modelName().nullable().describe('The model of the reading; null for free_tier and catalogue.'),
      as_of: asOf().nullable().describe("The reading's own as_of (for free_tier and catalogue, the asset's)."),
    })
    .describe(about);
/** `<key>.<field>` for each tracked reading whose field is `f` (all of them without `f`). */
const trackedFields = (tracked: Record<string, string>, f?: string) =>
  Object.entries(tracked)
    .filter(([, x]) => f === undefined || x === f)
    .map(([k, x]) => `${k}.${x}`) as [string, ...string[]];
export const ChangeEventVariants = {
  ChangeEventLevel: event(
    trackedFields(TRACKED_ASSET_FIELDS, 'risk_level'),
    level().nullable(),
    "An asset's risk level moved: an integer 1-10, null where there was or is no reading.",
  ),
  ChangeEventBand: event(
    trackedFields(TRACKED_ASSET_FIELDS, 'band'),
    Band.nullable(),
    'An asset\'s tenth band moved ("0.4-0.5"), null where there was or is no reading.',
  ),
  ChangeEventPhase: event(
    trackedFields(TRACKED_ASSET_FIELDS, 'label'),
    z.string().nullable(),
    "An asset's cycle phase turned: its label, null where there was or is no reading.",
  ),
  ChangeEventUniverse: event(
    trackedFields(TRACKED_UNIVERSE_FIELDS),
    z.string().nullable(),
    "A universe's fear & greed label, peak/valley zone or macro risk status moved: the text, null where there was or is none.",
  ),
  ChangeEventMembership: event(
    ['free_tier', 'catalogue'],
    z.boolean(),
    'An asset entered (true) or left (false) the free tier or the catalogue.',
  ),
  ChangeEventStale: event(
    MODEL_KEYS.map((k) => `stale_models.${k}`) as [string, ...string[]],
    z.boolean(),
    'A reading of an asset became stale (true) or fresh again (false).',
  ),
};
for (const [id, schema] of Object.entries(ChangeEventVariants)) api(id, schema);
type ChangeEventVariant = (typeof ChangeEventVariants)[keyof typeof ChangeEventVariants];
export const ChangeEvent = api(
  'ChangeEvent',
  z.discriminatedUnion('field', Object.values(ChangeEventVariants) as [ChangeEventVariant, ...ChangeEventVariant[]]).meta({
    description: 'One tracked change a refresh made; scores moving within a band or level are not events. Discriminated by field.',
    discriminator: {
      propertyName: 'field',
      mapping: Object.fromEntries(
        Object.entries(ChangeEventVariants).flatMap(([id, v]) => v.shape.field.options.map((f) => [f, `#/components/schemas/${id}`])),
      ),
    },
  }),
);
export const Changes = api(
  'Changes',
  z.object({
    started_at: z.iso.datetime().describe("When the feed's first refresh was published: no event is older."),
    from: z.iso.datetime().nullable().describe('published_at of the first event of this page.'),
    through: z.iso.datetime().nullable().describe('published_at of the last event of this page.'),
    event_count: count(HISTORY_MAX_LIMIT),
    total_event_count: count(MAX_EVENTS).describe('Events within the from/to window that the plan sees, across all pages.'),
    limit: z.number().int().min(1).max(HISTORY_MAX_LIMIT),
    max_limit: z.literal([...new Set(PLANS.map((p) => PLAN_LIMITS[p].historyCap))]),
    next_cursor: z
      .string()
      .regex(/^[0-9]{1,10}$/)
      .nullable()
      .describe('Pass as cursor for the next page; null on the last page.'),
    events: z.array(ChangeEvent),
  }),
);
export const ErrorBody = api(
  'Error',
  z
    .object({
      error: z.object({ code: z.enum(Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]]), message: z.string() }),
      disclaimer: Disclaimer,
    })
    .describe('Exactly error {code, message} and disclaimer; no as_of or model_version.'),
);

/** The response envelope around every data response. */
const envelope = <T extends z.ZodType>(data: T) =>
  z.object({
    as_of: asOf()
      .nullable()
      .describe('Publication time of the newest reading in the response; neither the request time nor the file write time.'),
    model_version: ModelVersion,
    disclaimer: Disclaimer,
    data,
  });
export const AssetRiskResponse = api('AssetRiskResponse', envelope(AssetRisk));
export const AssetListResponse = api('AssetListResponse', envelope(AssetList));
export const HistoryResponse = api('HistoryResponse', envelope(History));
export const BulkResponse = api('BulkResponse', envelope(Bulk));
export const SummaryResponse = api('SummaryResponse', envelope(Summary));
export const DcaSignalResponse = api('DcaSignalResponse', envelope(DcaSignal));
export const ChangesResponse = api('ChangesResponse', envelope(Changes));
/** A caller's own standing (decision 36): its plan, its limits, and where its counts stand. */
export const Usage = api(
  'Usage',
  z
    .object({
      plan: z.enum(PLANS),
      credential: z
        .string()
        .regex(/^(key:[0-9a-f]{8}|marketplace)$/)
        .describe("key: and the first 8 hex digits of the key's SHA-256 (as the operator's key list shows it), or marketplace."),
      label: z.string().nullable().describe("The key's label; null for a caller the marketplace admitted."),
      expires_at: z.iso.datetime().nullable().describe('When the key stops being accepted (UTC); null when it does not expire.'),
      limits: z.object({ per_minute: count(MOST.perMinute), per_month: count(MOST.perMonth) }),
      minute: z
        .object({
          used: count(MAX_REQUESTS).describe('Requests counted in the last 60 seconds, this one included.'),
          remaining: count(MOST.perMinute),
          reset_seconds: count(60).describe('Seconds until the oldest of them leaves the window.'),
        })
        .nullable()
        .describe('The rolling minute; null when the marketplace counts the requests.'),
      month: z
        .object({
          period: z
            .string()
            .regex(/^\d{4}-(0[1-9]|1[0-2])$/)
            .describe('The calendar month, YYYY-MM (UTC).'),
          used: count(MAX_REQUESTS).describe('Requests counted this month; this call is not one of them.'),
          remaining: count(MOST.perMonth),
          resets_at: z.iso.datetime().describe("The next month's first instant (UTC)."),
        })
        .nullable()
        .describe('The calendar month; null when the marketplace counts the requests.'),
    })
    .describe("The caller's plan, its limits and where its counts stand; asking counts toward the rolling minute, not the month."),
);
export const UsageResponse = api('UsageResponse', envelope(Usage));

// Push (decision 108): a customer's webhook endpoints, what it may send to create or change one, and the messages
// the gateway posts to them. Every bound is the contract's constant (webhooks.ts), which the shim's own reader of a
// request body (readEndpointBody) applies too; the test of the document feeds both the same bodies.
const ENDPOINT_ID = /^ep_[0-9a-f]{24}$/;
/** A signing secret as Standard Webhooks writes one: `whsec_` and 32 bytes in base64. */
const SECRET_RE = /^whsec_[A-Za-z0-9+/]{43}=$/;
const endpointId = () => z.string().regex(ENDPOINT_ID).describe('The endpoint: ep_ and 24 hex digits.');
/** A feed position: a count of the change feed's events, as /v1/changes counts them in next_cursor. */
const position = () => count(MAX_EVENTS);
export const WebhookField = api(
  'WebhookField',
  z
    .enum(WEBHOOK_FIELDS as [string, ...string[]])
    .describe('An event field a filter may name; stale_models stands for every stale_models.<model> field.'),
);
/** The filters, as a request sets them: at most WEBHOOK_FILTER_MAX names each; empty or absent passes every one. */
const filters = {
  fields: z.array(WebhookField).max(WEBHOOK_FILTER_MAX).describe('The event fields to send; empty: every field.'),
  symbols: z
    .array(symbolName())
    .max(WEBHOOK_FILTER_MAX)
    .describe('The assets whose events to send, as GET /v1/assets names them; empty with universes empty: every asset the plan sees.'),
  universes: z
    .array(Universe)
    .max(WEBHOOK_FILTER_MAX)
    .describe("The universes whose events to send: a universe's own and those of its assets."),
};
const webhookUrl = () =>
  z
    .string()
    .min(1)
    .max(WEBHOOK_URL_MAX)
    .describe(
      `The URL to deliver to: https, on port 443 or one the operator allows, to a public host, with no user name or password; at most ${WEBHOOK_URL_MAX} characters as given and as sent (an international name or path grows when encoded). Any other is refused with 400 bad_parameter.`,
    );
const webhookDescription = () =>
  z.string().max(WEBHOOK_DESCRIPTION_MAX).nullable().describe('A note of your own, for telling endpoints apart.');
const request = <T extends z.ZodType>(id: string, schema: T): T => (REQUEST_IDS.add(id), api(id, schema));
export const WebhookEndpointCreate = request(
  'WebhookEndpointCreate',
  z
    .strictObject({
      url: webhookUrl(),
      fields: filters.fields.optional(),
      symbols: filters.symbols.optional(),
      universes: filters.universes.optional(),
      description: webhookDescription().optional(),
    })
    .describe('A new endpoint: its URL, and the filters (absent: empty, every event the plan sees). No other member is taken.'),
);
export const WebhookEndpointUpdate = request(
  'WebhookEndpointUpdate',
  z
    .strictObject({
      url: webhookUrl().optional(),
      fields: filters.fields.optional(),
      symbols: filters.symbols.optional(),
      universes: filters.universes.optional(),
      description: webhookDescription().optional(),
      enabled: z.boolean().optional().describe('false pauses deliveries; true resumes them from the first message not delivered.'),
    })
    .describe('What to change: only the members given. No other member is taken.'),
);
const endpointFields = {
  id: endpointId(),
  url: z.string().max(WEBHOOK_URL_MAX),
  fields: filters.fields,
  symbols: filters.symbols,
  universes: filters.universes,
  description: z.string().max(WEBHOOK_DESCRIPTION_MAX).nullable(),
  enabled: z.boolean(),
  disabled_reason: z
    .string()
    .nullable()
    .describe('Why deliveries stopped (its owner disabled it, a 410 answer, the retries ran out); null while enabled.'),
  created_at: z.iso.datetime(),
  delivered_through: position().describe(
    'The change-feed position (as /v1/changes counts in next_cursor) the endpoint has received up to; a new endpoint starts at the end of the feed.',
  ),
  pending: position().describe('Messages not yet delivered to it.'),
};
export const WebhookEndpoint = api('WebhookEndpoint', z.object(endpointFields).describe('A webhook endpoint; never its secret.'));
const secret = () =>
  z.string().regex(SECRET_RE).describe('The signing secret (Standard Webhooks): shown once, here; keep it to verify webhook-signature.');
export const WebhookEndpointCreated = api(
  'WebhookEndpointCreated',
  z.object({ ...endpointFields, secret: secret() }).describe('The endpoint just created, with its signing secret.'),
);
export const WebhookSecretRotated = api(
  'WebhookSecretRotated',
  z
    .object({
      ...endpointFields,
      secret: secret(),
      previous_secret_expires_at: z.iso
        .datetime()
        .describe('Until then the previous secret signs beside the new one (two signatures in webhook-signature).'),
    })
    .describe('The endpoint with its new signing secret.'),
);
export const WebhookEndpointList = api(
  'WebhookEndpointList',
  z.object({
    endpoints: z.array(WebhookEndpoint).describe('Oldest first.'),
    max_endpoints: z.literal([...new Set(Object.values(WEBHOOK_ENDPOINTS))]).describe("The most endpoints the caller's plan holds."),
  }),
);
export const WebhookAttempt = api(
  'WebhookAttempt',
  z
    .object({
      message_id: z.string().describe("The message's webhook-id header."),
      attempt: z
        .number()
        .int()
        .min(1)
        .max(WEBHOOK_RETRY_MS.length + 1)
        .describe('1 for the first attempt at the message, 2 for its first retry, and so on (enabling an endpoint again starts at 1).'),
      at: z.iso.datetime(),
      status: z
        .number()
        .int()
        .min(100)
        .max(999)
        .nullable()
        .describe("The receiver's HTTP status; null when none came (a timeout, a refused connection, an address not allowed)."),
      error: z.string().nullable().describe('Why the attempt failed; null when it was answered 2xx.'),
      ms: z
        .number()
        .int()
        .min(0)
        .max(WEBHOOK_ATTEMPT_MS_MAX)
        .describe('How long the attempt took, in milliseconds (an attempt is cut after 10 s; a busy machine notes a little more).'),
    })
    .describe('One attempt to deliver a message.'),
);
export const WebhookDeliveries = api(
  'WebhookDeliveries',
  z.object({
    endpoint_id: endpointId(),
    deliveries: z.array(WebhookAttempt).max(WEBHOOK_ATTEMPTS_KEPT).describe('The recent attempts, newest first.'),
  }),
);
export const WebhookEndpointResponse = api('WebhookEndpointResponse', envelope(WebhookEndpoint));
export const WebhookEndpointCreatedResponse = api('WebhookEndpointCreatedResponse', envelope(WebhookEndpointCreated));
export const WebhookSecretRotatedResponse = api('WebhookSecretRotatedResponse', envelope(WebhookSecretRotated));
export const WebhookEndpointListResponse = api('WebhookEndpointListResponse', envelope(WebhookEndpointList));
export const WebhookAttemptResponse = api('WebhookAttemptResponse', envelope(WebhookAttempt));
export const WebhookDeliveriesResponse = api('WebhookDeliveriesResponse', envelope(WebhookDeliveries));
// What the gateway posts to an endpoint. `type` is a one-name enum rather than a const: the served document gives a
// const text as an example only, and a receiver's generated types narrow a message by it.
export const WebhookChangesMessage = api(
  'WebhookChangesMessage',
  z
    .object({
      type: z.enum(['changes.published']),
      published_at: z.iso.datetime().describe('When the refresh that raised the events was published.'),
      from_position: z
        .number()
        .int()
        .min(1)
        .max(MAX_EVENTS)
        .describe("The first change-feed position the message covers: its refresh's first, or the one after the message before it."),
      to_position: z
        .number()
        .int()
        .min(1)
        .max(MAX_EVENTS)
        .describe('The last: once this message is delivered, the endpoint has received everything up to it.'),
      events: z
        .array(ChangeEvent)
        .min(1)
        .max(WEBHOOK_MESSAGE_EVENTS)
        .describe(
          "The refresh's events the endpoint's filters pass and its plan sees, in feed order; a refresh with more is sent as several messages.",
        ),
    })
    .describe('changes.published: what one refresh changed, for this endpoint.'),
);
export const WebhookTestMessage = api(
  'WebhookTestMessage',
  z
    .object({
      type: z.enum(['webhook.test']),
      endpoint_id: endpointId(),
      sent_at: z.iso.datetime(),
    })
    .describe('webhook.test: sent when its owner asks (POST /v1/webhooks/{id}/test), to try the receiver.'),
);

// The tree's own files: read by the next build (the ledger), by the shim (catalogue, manifest) and by `keys`.
const internal = <T extends z.ZodType>(id: string, schema: T): T => (INTERNAL_IDS.add(id), SHAPES.add(schema, { id }), schema);

export const HistoryLedger = internal(
  'HistoryLedger',
  z.object({
    as_of: z.string().nullable(),
    model_version: ModelVersion,
    disclaimer: Disclaimer,
    data: z.object({
      symbol: z.string(),
      cadence: z.string(),
      first_published: date().nullable(),
      total_row_count: count(MAX_LEDGER_ROWS),
      rows: z.array(HistoryRow),
    }),
  }),
);
export const ChangeLedger = internal(
  'ChangeLedger',
  z.object({
    started_at: z.iso.datetime(),
    events: z.array(ChangeEvent),
    basic: z
      .array(count(MAX_EVENTS - 1))
      .describe('Positions in events (from 0) that a basic caller sees: its free-tier assets at the time, and the crypto universe.'),
  }),
);
export const Catalog = internal(
  'Catalog',
  z.object({
    schema: z.literal(1),
    universes: z.record(z.string(), z.array(z.string())),
    free_tier: z.array(z.string()),
    index: z.record(symbolName(), symbolName()).describe('Upper-cased symbol to canonical symbol.'),
    assets: z.record(
      symbolName(),
      z.object({ asset_class: assetClass(), universes: z.array(Universe), free_tier: z.boolean(), dca_signal: z.boolean() }),
    ),
  }),
);
const Digest = z.object({ size: count(Number.MAX_SAFE_INTEGER), sha256: z.string().regex(/^[0-9a-f]{64}$/) });
export const ManifestEntry = Digest.extend({
  encodings: z.partialRecord(z.enum(ENCODINGS), Digest).optional().describe('Compressed variants beside the file (name + .br, .gz).'),
});
export const Manifest = internal(
  'Manifest',
  z.object({
    schema: z.literal(1),
    built_at: z.iso.datetime(),
    pages: z.array(z.string()).optional().describe('The source pages this tree answers for.'),
    contract: z
      .string()
      .regex(/^[0-9a-f]{64}$/)
      .optional()
      .describe('SHA-256 of the closed schemas the files were validated against.'),
    files: z.record(z.string(), ManifestEntry),
  }),
);
/** What the build checks of the document it serves (the document is the contract; its schemas come from here). */
export const OpenApi = internal(
  'OpenApi',
  z.looseObject({
    openapi: z.literal('3.1.0'),
    info: z.looseObject({ version: z.literal(API_VERSION) }),
    paths: z.record(z.string(), z.unknown()),
    components: z.record(z.string(), z.unknown()),
  }),
);

export type Disclaimer = z.infer<typeof Disclaimer>;
export type Universe = z.infer<typeof Universe>;
export type Price = z.infer<typeof Price>;
export type Gravity = z.infer<typeof Gravity>;
export type Twap = z.infer<typeof Twap>;
export type SmaComposite = z.infer<typeof SmaComposite>;
export type Phase = z.infer<typeof Phase>;
export type Dca = z.infer<typeof Dca>;
export type FearGreed = z.infer<typeof FearGreed>;
export type PeakValley = z.infer<typeof PeakValley>;
export type MacroRisk = z.infer<typeof MacroRisk>;
export type MarketContext = z.infer<typeof MarketContext>;
export type AssetRisk = z.infer<typeof AssetRisk>;
export type AssetListEntry = z.infer<typeof AssetListEntry>;
export type AssetList = z.infer<typeof AssetList>;
export type HistoryRow = z.infer<typeof HistoryRow>;
export type History = z.infer<typeof History>;
export type Bulk = z.infer<typeof Bulk>;
export type Summary = z.infer<typeof Summary>;
export type DcaSignal = z.infer<typeof DcaSignal>;
export type Health = z.infer<typeof Health>;
export type ErrorBody = z.infer<typeof ErrorBody>;
export type HistoryLedger = z.infer<typeof HistoryLedger>;
export type Catalog = z.infer<typeof Catalog>;
export type ChangeEvent = z.infer<typeof ChangeEvent>;
export type ChangeLedger = z.infer<typeof ChangeLedger>;
export type ChangesResponse = z.infer<typeof ChangesResponse>;
export type ManifestEntry = z.infer<typeof ManifestEntry>;
export type Manifest = z.infer<typeof Manifest>;
export type AssetRiskResponse = z.infer<typeof AssetRiskResponse>;
export type AssetListResponse = z.infer<typeof AssetListResponse>;
export type HistoryResponse = z.infer<typeof HistoryResponse>;
export type BulkResponse = z.infer<typeof BulkResponse>;
export type SummaryResponse = z.infer<typeof SummaryResponse>;
export type DcaSignalResponse = z.infer<typeof DcaSignalResponse>;
export type Usage = z.infer<typeof Usage>;
export type UsageResponse = z.infer<typeof UsageResponse>;
export type WebhookEndpoint = z.infer<typeof WebhookEndpoint>;
export type WebhookAttempt = z.infer<typeof WebhookAttempt>;
export type WebhookChangesMessage = z.infer<typeof WebhookChangesMessage>;
