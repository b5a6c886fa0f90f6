/**
 * No impossible number, no silent substitute (decision 101). Every number the served contract holds has both its
 * bounds stated there, so they reach the document as minimum/maximum (or exclusiveMinimum): the numeric fields are
 * found by walking the generated schemas, so a field that gains no bound fails this test. The scales (0-100, 0-1,
 * 1-10) are scales.test.ts's; here are the prices and regression lines (above 0, at most USD_MAX), the premiums
 * (above -100%, at most PREMIUM_MAX_PCT), the rank and the counts. A page printing a price or a premium out of its
 * bounds is refused naming the file, the field and the value; so is a page whose point read is no number, or which
 * holds two traces of a name a reading is read by.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { CATALOG, tempDir } from '../../helpers.js';
import { writeSite } from '../../../fixtures/synth/site.js';
import { PREMIUM_MAX_PCT, USD_MAX } from '../../../generator/contract/shapes.js';
import { componentSchemas } from '../../../generator/openapi/schemas.js';
import { parsePage } from '../../../generator/site/parse-page.js';
import type { PageKind } from '../../../generator/site/registry.js';
import { card, customdata, fileOf, rename } from './page-edits.js';

type Schema = Record<string, unknown>;
interface Bounds {
  min?: number;
  xmin?: number;
  max?: number;
  xmax?: number;
  listed?: unknown[];
}

/** Every numeric field of the served contract, as `Component.path`, with the bounds its schema states. */
function numericFields(): Map<string, Bounds> {
  const out = new Map<string, Bounds>();
  const walk = (node: unknown, path: string) => {
    if (!node || typeof node !== 'object') return;
    const s = node as Schema;
    const types = ([] as unknown[]).concat(s.type ?? []);
    if (types.includes('number') || types.includes('integer'))
      out.set(path, {
        min: s.minimum as number | undefined,
        xmin: s.exclusiveMinimum as number | undefined,
        max: s.maximum as number | undefined,
        xmax: s.exclusiveMaximum as number | undefined,
        listed: (s.enum as unknown[] | undefined) ?? ('const' in s ? [s.const] : undefined),
      });
    for (const [k, v] of Object.entries((s.properties as Record<string, unknown>) ?? {})) walk(v, `${path}.${k}`);
    if (s.items) walk(s.items, `${path}[]`);
    if (s.additionalProperties && typeof s.additionalProperties === 'object') walk(s.additionalProperties, `${path}{}`);
    for (const option of [...((s.oneOf as unknown[]) ?? []), ...((s.anyOf as unknown[]) ?? [])]) walk(option, path);
  };
  for (const [id, schema] of Object.entries(componentSchemas())) walk(schema, id);
  return out;
}

const bounded = (b: Bounds) => !!b.listed?.length || ((b.min ?? b.xmin) !== undefined && (b.max ?? b.xmax) !== undefined);
const isScale = (b: Bounds) => ['0-100', '0-1', '1-10'].includes(`${b.min}-${b.max}`);
const isUsd = (b: Bounds) => b.xmin === 0 && b.max === USD_MAX && b.min === undefined;
const isPremium = (b: Bounds) => b.xmin === -100 && b.max === PREMIUM_MAX_PCT && b.min === undefined;

/** Numbers the build computes (counts, limits, versions): no page prints them, the build and the shim make them. */
const COMPUTED: Record<string, string> = {
  'AssetRisk.market_cap_rank': 'the ranking page, refused there (a case below)',
  'DcaSignal.multiplier': 'never a number: `const: null`, typed a number only for the generators (decision 107)',
  'AssetList.asset_count': 'assets listed',
  'AssetList.total_asset_count': 'assets of the catalogue (at most MAX_ASSETS, refused when loaded)',
  'History.row_count': 'rows of a page',
  'History.total_row_count': 'rows of a ledger',
  'History.limit': 'the page size asked for',
  'History.max_limit': "a plan's cap",
  'Bulk.count': 'assets returned',
  'Summary.asset_count': "a universe's members",
  'Summary.gravity.bands.accumulation': 'members in the band',
  'Summary.gravity.bands.mid_cycle': 'members in the band',
  'Summary.gravity.bands.late_cycle': 'members in the band',
  'Summary.gravity.bands.cycle_top': 'members in the band',
  'Health.schema': "the health document's version",
  'Changes.event_count': 'events of a page',
  'Changes.total_event_count': 'events of the feed',
  'Changes.limit': 'the page size asked for',
  'Changes.max_limit': "a plan's cap",
  'Usage.limits.per_minute': "the plan's",
  'Usage.limits.per_month': "the plan's",
  'Usage.minute.used': "the quota store's count",
  'Usage.minute.remaining': "the plan's limit less the count",
  'Usage.minute.reset_seconds': 'within the rolling minute',
  'Usage.month.used': "the quota store's count",
  'Usage.month.remaining': "the plan's limit less the count",
  'WebhookEndpoint.delivered_through': 'a position in the change feed',
  'WebhookEndpoint.pending': 'messages counted from the feed',
  'WebhookEndpointCreated.delivered_through': 'a position in the change feed',
  'WebhookEndpointCreated.pending': 'messages counted from the feed',
  'WebhookSecretRotated.delivered_through': 'a position in the change feed',
  'WebhookSecretRotated.pending': 'messages counted from the feed',
  'WebhookEndpointList.max_endpoints': "a plan's limit",
  'WebhookAttempt.attempt': 'attempts at one message, at most the retries and one',
  'WebhookAttempt.status': "the receiver's HTTP status",
  'WebhookAttempt.ms': "the attempt's duration",
  'WebhookChangesMessage.from_position': 'a position in the change feed',
  'WebhookChangesMessage.to_position': 'a position in the change feed',
};
/** Prices and premiums the build derives from readings the parsers hold to the same bounds. */
const DERIVED: Record<string, string> = {
  'DcaSignal.state.price': 'Dca.price',
  'DcaSignal.state.fair_value': 'Dca.fair_value',
  'DcaSignal.state.floor': 'Dca.floor',
  'DcaSignal.state.ceiling': 'Dca.ceiling',
  'DcaSignal.state.premium_pct': 'Dca.premium_pct',
  'Summary.twap_premium_pct.median': 'the median of Twap.premium_pct',
};

const dir = tempDir('rr-bounds-');

beforeAll(async () => {
  await writeSite({ out: dir, day: 1, symbols: ['BTC', 'AERO', 'SPY'], historyStart: '2025-06-01', catalog: CATALOG });
});

/** The name of the first trace named `name` removed. */
const unname = (name: string) => (h: string) => h.replace(`"name":"${name}",`, '');

/**
 * The `y` points [from, to) of the first trace after `marker` (its `"name":"..."`, or a text only it holds) set to
 * `value`; a negative index counts from the end, so the default is the last point. Typed arrays (f8, f4) and plain
 * arrays alike.
 */
const points =
  (marker: string, value: number | null, from = -1, to?: number) =>
  (h: string): string => {
    const at = h.indexOf(marker);
    if (at < 0) throw new Error(`no ${marker} on the page`);
    const y = h.indexOf('"y":', at) + 4;
    const set = (n: number, put: (i: number) => void) => {
      const a = from < 0 ? n + from : from;
      const b = to === undefined ? a + 1 : to < 0 ? n + to : to;
      for (let i = a; i < b; i++) put(i);
    };
    if (h[y] === '[') {
      const end = h.indexOf(']', y) + 1;
      const values = JSON.parse(h.slice(y, end)) as (number | null)[];
      set(values.length, (i) => (values[i] = value));
      return h.slice(0, y) + JSON.stringify(values) + h.slice(end);
    }
    const head = /^\{"dtype":"(f[48])","bdata":"/.exec(h.slice(y, y + 40))!;
    const start = y + head[0].length;
    const end = h.indexOf('"', start);
    const bytes = Buffer.from(h.slice(start, end).replace(/\\u002f/g, '/'), 'base64');
    const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    const values = head[1] === 'f4' ? new Float32Array(buffer) : new Float64Array(buffer);
    set(values.length, (i) => (values[i] = value ?? NaN));
    return h.slice(0, start) + Buffer.from(values.buffer).toString('base64').replace(/\//g, '\\u002f') + h.slice(end);
  };

interface Case {
  symbol: string | null;
  kind: PageKind;
  file?: string;
  edit: (html: string) => string;
  /** The field the refusal names. */
  names: RegExp;
  /** What it says was found. */
  found: RegExp;
  /** Parse the weekly archive too (the history row's fields are read there). */
  archive?: boolean;
}

const GRAVITY_PRICE = '"name":"Price Trend"';
/** The DCA page's price: its one unnamed line (its line colour is its own). */
const DCA_PRICE = '"rgba(255, 255, 255, 0.2)"';
/** The crypto phase chart's fair value line runs 156 weeks past the last bar: the point read is 157th from the end. */
const PHASE_LAST_BAR = -157;

/** Per price or premium field a page prints or a series carries: pages that hold it out of its bounds. */
const CASES: Record<string, Case[]> = {
  'Price.value': [
    { symbol: 'BTC', kind: 'crypto_gravity', edit: points(GRAVITY_PRICE, -5), names: /^price\.value$/, found: /found -5\)/ },
    { symbol: 'BTC', kind: 'crypto_gravity', edit: points(GRAVITY_PRICE, 1e308), names: /^price\.value$/, found: /found 1e\+308\)/ },
    { symbol: 'SPY', kind: 'equity_twap', edit: points('"name":"Daily Spot"', 0), names: /^price\.value$/, found: /found 0\)/ },
  ],
  'Twap.baseline': [
    { symbol: 'BTC', kind: 'crypto_gravity', edit: card('Lifetime TWAP Base', '$0'), names: /^twap\.baseline$/, found: /found 0\)/ },
    {
      symbol: 'SPY',
      kind: 'equity_twap',
      edit: card('EXPANDING TWAP', '$2,000,000,000.00'),
      names: /^twap\.baseline$/,
      found: /found 2000000000\)/,
    },
  ],
  'Twap.premium_pct': [
    {
      symbol: 'BTC',
      kind: 'crypto_gravity',
      edit: card('Market Premium', '-100.00%'),
      names: /^twap\.premium_pct$/,
      found: /found -100\)/,
    },
    {
      symbol: 'SPY',
      kind: 'equity_twap',
      edit: card('PREMIUM / DISCOUNT', '+100,001.00%'),
      names: /^twap\.premium_pct$/,
      found: /found 100001\)/,
    },
  ],
  'Phase.fair_value': [
    {
      symbol: 'BTC',
      kind: 'crypto_phase',
      edit: points('"name":"Polynomial Fair Value"', -5, PHASE_LAST_BAR),
      names: /^phase\.fair_value$/,
      found: /found -5\)/,
    },
    { symbol: 'SPY', kind: 'equity_valuation', edit: card('FAIR VALUE', '$0.00'), names: /^phase\.fair_value$/, found: /found 0\)/ },
  ],
  'Phase.max_euphoria_target': [
    {
      symbol: 'BTC',
      kind: 'crypto_phase',
      edit: card('Max Euphoria Target (+3σ)', '$2,000,000,000.00'),
      names: /^phase\.max_euphoria_target$/,
      found: /found 2000000000\)/,
    },
    {
      symbol: 'SPY',
      kind: 'equity_valuation',
      edit: customdata(/Max Euphoria \(\+3σ\)/, 1, -5),
      names: /^phase\.max_euphoria_target$/,
      found: /found -5\)/,
    },
  ],
  'Dca.price': [{ symbol: 'BTC', kind: 'dca_regression', edit: points(DCA_PRICE, 1e308), names: /^dca\.price$/, found: /found 1e\+308\)/ }],
  'Dca.fair_value': [
    {
      symbol: 'AERO',
      kind: 'dca_regression',
      edit: points('"name":"Fair Value (Regression)"', -5),
      names: /^dca\.fair_value$/,
      found: /found -5\)/,
    },
  ],
  'Dca.floor': [
    { symbol: 'BTC', kind: 'dca_regression', edit: points('"name":"Bottom Regression"', 0), names: /^dca\.floor$/, found: /found 0\)/ },
  ],
  'Dca.ceiling': [
    {
      symbol: 'BTC',
      kind: 'dca_regression',
      edit: points('"name":"Peak Regression"', -1e308),
      names: /^dca\.ceiling$/,
      found: /found -1e\+308\)/,
    },
    {
      symbol: 'BTC',
      kind: 'dca_regression',
      edit: points('"name":"Peak Regression"', 1e308),
      names: /^dca\.ceiling$/,
      found: /found 1e\+308\)/,
    },
  ],
  'Dca.premium_pct': [
    {
      symbol: 'BTC',
      kind: 'dca_regression',
      edit: card('Premium / Discount', '-100.00%'),
      names: /^dca\.premium_pct$/,
      found: /found -100\)/,
    },
    // Variant A prints no premium: derived from a fair value a ten-thousandth of the price, it is off its bounds.
    {
      symbol: 'AERO',
      kind: 'dca_regression',
      edit: (h) => points('"name":"Fair Value (Regression)"', 1e-6)(points(DCA_PRICE, 100)(h)),
      names: /^dca\.premium_pct$/,
      found: /found 9999999900\)/,
    },
  ],
  'HistoryRow.price': [
    {
      symbol: 'BTC',
      kind: 'crypto_gravity',
      archive: true,
      edit: points(GRAVITY_PRICE, -5, 100, 114),
      names: /^archive\.\d{4}-\d\d-\d\d\.price$/,
      found: /found -5\)/,
    },
  ],
  'HistoryRow.twap_premium_pct': [
    {
      symbol: 'BTC',
      kind: 'crypto_twap_risk',
      archive: true,
      edit: customdata(/Risk Level \d+/, 0, -150),
      names: /^archive\.\d{4}-\d\d-\d\d\.twap_premium_pct$/,
      found: /found -150\)/,
    },
    {
      symbol: 'SPY',
      kind: 'equity_twap',
      archive: true,
      edit: customdata(/Gravity Level \d+/, 0, 200_000),
      names: /^archive\.\d{4}-\d\d-\d\d\.twap_premium_pct$/,
      found: /found 200000\)/,
    },
  ],
  'HistoryRow.dca_premium_pct': [
    {
      symbol: 'BTC',
      kind: 'dca_regression',
      archive: true,
      edit: points('"name":"Fair Value (Regression)"', -1, 0, -1),
      names: /^archive\.\d{4}-\d\d-\d\d\.dca_premium_pct$/,
      found: /found -[\d.]+\)/,
    },
  ],
  'AssetRisk.market_cap_rank': [
    {
      symbol: null,
      kind: 'market_cap_ranking',
      file: 'Crypto_Story_Galaxy.html',
      edit: (h) => h.replace(/"Market_Cap_Rank":\d+/, '"Market_Cap_Rank":1000000'),
      names: /^rawData\.0\.Market_Cap_Rank$/,
      found: /found 1000000\)/,
    },
  ],
};

/** A point a reading is read at that is no number, and two traces of a name read by that name: refused, never read past. */
const REFUSALS: [string, Case][] = [
  [
    'a NaN last price point',
    {
      symbol: 'BTC',
      kind: 'crypto_gravity',
      edit: points(GRAVITY_PRICE, NaN),
      names: /^trace "Price Trend"$/,
      found: /^the last point \(\d{4}-\d\d-\d\d\) is NaN, not a finite number$/,
    },
  ],
  [
    'an infinite last price point',
    {
      symbol: 'SPY',
      kind: 'equity_twap',
      edit: points('"name":"Daily Spot"', Infinity),
      names: /^trace "Daily Spot"$/,
      found: /is Infinity, not a finite number$/,
    },
  ],
  [
    'a null last point in a plain array',
    {
      symbol: 'SPY',
      kind: 'equity_sma_composite',
      edit: points('"name":"Normalized Composite Risk"', null),
      names: /^trace "Normalized Composite Risk"$/,
      found: /is NaN, not a finite number$/,
    },
  ],
  [
    'a +Infinity ceiling (never null)',
    {
      symbol: 'BTC',
      kind: 'dca_regression',
      edit: points('"name":"Peak Regression"', Infinity),
      names: /^trace "Peak Regression"$/,
      found: /^the point at \d{4}-\d\d-\d\d is Infinity, not a finite number$/,
    },
  ],
  [
    'a NaN DCA price point',
    {
      symbol: 'AERO',
      kind: 'dca_regression',
      edit: points(DCA_PRICE, NaN),
      names: /^price trace$/,
      found: /is NaN, not a finite number$/,
    },
  ],
  [
    'a NaN phase fair value at the last bar',
    {
      symbol: 'BTC',
      kind: 'crypto_phase',
      edit: points('"name":"Polynomial Fair Value"', NaN, PHASE_LAST_BAR),
      names: /^trace "Polynomial Fair Value"$/,
      found: /is NaN, not a finite number$/,
    },
  ],
  [
    'an infinite +3 sigma edge at the last bar',
    {
      symbol: 'SPY',
      kind: 'equity_valuation',
      edit: customdata(/Max Euphoria \(\+3σ\)/, 1, Infinity),
      names: /^trace "Max Euphoria \(\+3σ\)" customdata$/,
      found: /is Infinity, not a finite number$/,
    },
  ],
  [
    'a second "Price Trend" trace',
    {
      symbol: 'BTC',
      kind: 'crypto_gravity',
      edit: rename(/Lifetime TWAP/, 'Price Trend'),
      names: /^trace "Price Trend"$/,
      found: /^2 traces of that name: which one to read is ambiguous$/,
    },
  ],
  [
    'a second "Daily Spot" trace',
    {
      symbol: 'SPY',
      kind: 'equity_twap',
      edit: rename(/Expanding TWAP Baseline/, 'Daily Spot'),
      names: /^trace "Daily Spot"$/,
      found: /^2 traces of that name/,
    },
  ],
  [
    'a second unnamed line on the DCA page',
    {
      symbol: 'BTC',
      kind: 'dca_regression',
      edit: unname('Fair Value (Regression)'),
      names: /^price trace \(the unnamed line\)$/,
      found: /^2 traces of that name/,
    },
  ],
  [
    'two ceilings on the DCA page',
    {
      symbol: 'BTC',
      kind: 'dca_regression',
      edit: rename(/Bottom Regression/, 'Peak Regression'),
      names: /^trace "Peak Regression" or "Peak Euphoria"$/,
      found: /^2 traces of that name/,
    },
  ],
  [
    'a second "BTC Base Trend" trace',
    {
      symbol: null,
      kind: 'crypto_fear_greed',
      file: 'BTC_Unified_FNG_Matrix.html',
      edit: rename(/30D Sentiment SMA/, 'BTC Base Trend'),
      names: /^trace "BTC Base Trend"$/,
      found: /^2 traces of that name/,
    },
  ],
];

describe('every numeric field of the served contract', () => {
  const found = numericFields();
  it('states both its bounds in the served document', () => {
    expect(found.size).toBeGreaterThan(60);
    expect(
      [...found].filter(([, b]) => !bounded(b)).map(([f]) => f),
      'numbers without both bounds: give each a .min() and .max() in generator/contract/shapes.ts (decision 101)',
    ).toEqual([]);
  });

  it('is a scale, a price, a premium, or a number the build computes: every price and premium has a page case here', () => {
    const usd = [...found].filter(([, b]) => isUsd(b)).map(([f]) => f);
    const premium = [...found].filter(([, b]) => isPremium(b)).map(([f]) => f);
    expect(usd).toEqual(
      expect.arrayContaining(['Price.value', 'Twap.baseline', 'Dca.ceiling', 'HistoryRow.price', 'Phase.max_euphoria_target']),
    );
    expect(premium).toEqual(expect.arrayContaining(['Twap.premium_pct', 'Dca.premium_pct', 'HistoryRow.dca_premium_pct']));
    const unclassified = [...found].filter(([f, b]) => !isScale(b) && !isUsd(b) && !isPremium(b) && !(f in COMPUTED)).map(([f]) => f);
    expect(
      unclassified,
      'numbers of no class here: a count the build or the shim makes goes in COMPUTED above, saying what it counts; a ' +
        'reading a page prints that is no scale, price or premium gets a class of its own here (an is... test beside isUsd) with a page case in CASES that breaks each bound',
    ).toEqual([]);
    const covered = new Set([...Object.keys(CASES), ...Object.keys(DERIVED)]);
    expect([...usd, ...premium].filter((f) => !covered.has(f))).toEqual([]);
    expect([...covered].filter((f) => !usd.includes(f) && !premium.includes(f) && !(f in COMPUTED))).toEqual([]);
    expect(Object.keys(COMPUTED).filter((f) => !found.has(f))).toEqual([]);
  });
});

/** Parses `c`'s page edited, expecting a refusal; then the page as published, expecting its readings. */
async function refused(c: Case, file: string) {
  const pages = join(dir, 'edited');
  const html = readFileSync(join(dir, file), 'utf8');
  const edited = c.edit(html);
  expect(edited, 'the case edit changed nothing').not.toBe(html);
  mkdirSync(pages, { recursive: true });
  writeFileSync(join(pages, file), edited);
  const outcome = await parsePage({ dir: pages, file, kind: c.kind, archive: !!c.archive });
  expect('error' in outcome && outcome.error.message).toMatch(new RegExp(`^${file.replace(/\./g, '\\.')}: `));
  expect('error' in outcome && outcome.error.field).toMatch(c.names);
  expect('error' in outcome && outcome.error.found).toMatch(c.found);
  writeFileSync(join(pages, file), html);
  expect(await parsePage({ dir: pages, file, kind: c.kind, archive: !!c.archive })).toHaveProperty('result');
}

describe('a page', () => {
  const cases = Object.entries(CASES).flatMap(([field, list]) => list.map((c) => [field, c.file ?? fileOf(c.symbol!, c.kind), c] as const));
  it.each(cases)('holding %s out of its bounds (%s) is refused, naming the file, the field and the value', async (_field, file, c) => {
    await refused(c, file);
  });

  it.each(REFUSALS.map(([what, c]) => [what, c.file ?? fileOf(c.symbol!, c.kind), c] as const))(
    'with %s (%s) is refused, naming the file, the trace and what is there',
    async (_what, file, c) => {
      await refused(c, file);
    },
  );
});
