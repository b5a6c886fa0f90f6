/**
 * Every published number on its scale: the contract gives each field that carries one of the spec's three scales
 * (0-100, 0-1, 1-10) its bounds, and a page holding a value outside them is refused like any unreadable page,
 * naming the file and the field. The scaled fields are found by walking the contract's generated schemas, so a
 * field that gains a scale without a page case here fails this test.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { CATALOG, tempDir } from '../../helpers.js';
import { writeSite } from '../../../fixtures/synth/site.js';
import { componentSchemas } from '../../../generator/openapi/schemas.js';
import { parsePage } from '../../../generator/site/parse-page.js';
import type { PageKind } from '../../../generator/site/registry.js';
import { card, customdata, fileOf, rename } from './page-edits.js';

const SCALES = ['0-100', '0-1', '1-10'];
type Schema = Record<string, unknown>;

/** Every field of the contract whose bounds are one of the spec's scales, as `Component.path`, with its scale. */
function scaledFields(): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (node: unknown, path: string) => {
    if (!node || typeof node !== 'object') return;
    const s = node as Schema;
    const types = ([] as unknown[]).concat(s.type ?? []);
    if ((types.includes('number') || types.includes('integer')) && `${s.minimum}-${s.maximum}` !== 'undefined-undefined') {
      const scale = `${s.minimum}-${s.maximum}`;
      if (SCALES.includes(scale)) out.set(path, scale);
    }
    for (const [k, v] of Object.entries((s.properties as Record<string, unknown>) ?? {})) walk(v, `${path}.${k}`);
    if (s.items) walk(s.items, `${path}[]`);
    for (const option of (s.oneOf as unknown[]) ?? []) walk(option, path);
  };
  for (const [id, schema] of Object.entries(componentSchemas())) walk(schema, id);
  return out;
}

/** Counts whose bounds happen to read as a scale: no reading, no page. */
const NOT_A_SCALE: Record<string, string> = {
  'WebhookAttempt.attempt': 'attempts at one message: the first and its nine retries',
};

/** Fields computed from readings the parsers already hold to their scales; no page prints them. */
const DERIVED: Record<string, string> = {
  'Summary.gravity.median': 'the median of Gravity.score',
  'Summary.gravity.mean': 'the mean of Gravity.score',
  'Summary.gravity.lowest[].score': 'Gravity.score',
  'Summary.gravity.highest[].score': 'Gravity.score',
  'Summary.twap_premium_pct.share_above_twap': 'a share of assets',
  'Summary.sma_composite.median': 'the median of SmaComposite.score',
  'Summary.barometer.peak_valley.score': 'PeakValley.score',
  'Summary.barometer.fear_greed.value': 'FearGreed.value',
  'DcaSignal.state.risk': 'Dca.risk',
  'ChangeEventLevel.from': 'a published Gravity.risk_level or Twap.risk_level',
  'ChangeEventLevel.to': 'a published Gravity.risk_level or Twap.risk_level',
};

const dir = tempDir('rr-scales-');

beforeAll(async () => {
  await writeSite({ out: dir, day: 1, symbols: ['BTC', 'SPY'], historyStart: '2025-06-01', catalog: CATALOG });
});

/** The first point of a plain-array trace's `y` set to `value`. */
const firstPlain = (name: string, value: number) => (h: string) => {
  const at = h.indexOf('"y":[', h.indexOf(`"name":"${name}"`)) + 5;
  return h.slice(0, at) + String(value) + h.slice(h.indexOf(',', at));
};

interface Case {
  symbol: string | null;
  kind: PageKind;
  file?: string;
  edit: (html: string) => string;
  /** The field the refusal names. */
  names: RegExp;
}

/** Per scaled field of a reading or a history row: pages that print it out of scale. */
const CASES: Record<string, Case[]> = {
  'Gravity.score': [
    { symbol: 'BTC', kind: 'crypto_gravity', edit: card('Gravity Risk (0-100)', '130.4'), names: /gravity\.score/ },
    { symbol: 'SPY', kind: 'equity_twap', edit: card('GRAVITY RISK', '130.4/100'), names: /gravity\.score/ },
  ],
  'Gravity.risk_level': [
    { symbol: 'SPY', kind: 'equity_twap', edit: rename(/Gravity Level \d+/, 'Gravity Level 11'), names: /gravity\.risk_level/ },
  ],
  'Twap.risk_level': [
    { symbol: 'BTC', kind: 'crypto_twap_risk', edit: (h) => h.replace(/Level \d+(\s*<\/p>)/, 'Level 12$1'), names: /twap\.risk_level/ },
  ],
  'SmaComposite.score': [
    { symbol: 'BTC', kind: 'crypto_sma_20w', edit: (h) => h.replace(/\| Risk: [\d.]+/, '| Risk: 1.55'), names: /sma_composite\.score/ },
  ],
  'SmaComposite.page_value': [
    {
      symbol: 'SPY',
      kind: 'equity_sma_composite',
      edit: (h) => h.replace(/("name":"Normalized Composite Risk".*?"y":\[[^\]]*,)[^,\]]+\]/, '$11.5]'),
      names: /sma_composite\.(score|page_value)/,
    },
  ],
  'Phase.completion_pct': [
    { symbol: 'BTC', kind: 'crypto_phase', edit: card('Cycle Completion Matrix', '250.0%'), names: /phase\.completion_pct/ },
    { symbol: 'SPY', kind: 'equity_valuation', edit: card('PHASE COMPLETION', '-40.0%'), names: /phase\.completion_pct/ },
  ],
  'Dca.risk': [
    { symbol: 'BTC', kind: 'dca_regression', edit: rename(/Risk Level \d\.\d-\d\.\d/, 'Risk Level 1.0-1.1'), names: /dca\.risk/ },
  ],
  'FearGreed.value': [
    {
      symbol: null,
      kind: 'crypto_fear_greed',
      file: 'BTC_Unified_FNG_Matrix.html',
      edit: card('Daily Fear & Greed', '161'),
      names: /fear_greed\.value/,
    },
    {
      symbol: null,
      kind: 'sector_widget',
      file: 'widget_markets_indicators.html',
      edit: (h) => h.replace(/(meter-marker" style="left:)[\d.]+%/, '$1179.10%'),
      names: /fear_greed\.value/,
    },
  ],
  'FearGreed.sma_30': [
    {
      symbol: null,
      kind: 'crypto_fear_greed',
      file: 'BTC_Unified_FNG_Matrix.html',
      edit: card('30-Day Sentiment SMA', '130'),
      names: /fear_greed\.sma_30/,
    },
  ],
  'PeakValley.score': [
    {
      symbol: null,
      kind: 'crypto_peak_valley',
      file: 'crypto_risk_normalized.html',
      edit: (h) => h.replace(/(id="metric-value">)[^<]*/, '$1146.8%'),
      names: /peak_valley\.score/,
    },
    {
      symbol: null,
      kind: 'sector_widget',
      file: 'widget_markets_indicators.html',
      edit: (h) => h.replace(/(tile-peak_valley.*?<span class="score"[^>]*>)[^<]*/, '$1181.1%'),
      names: /peak_valley\.score/,
    },
  ],
  'MacroRisk.score': [
    {
      symbol: null,
      kind: 'sector_widget',
      file: 'widget_markets_indicators.html',
      edit: (h) => h.replace(/(tile-macro_risk.*?<span class="score"[^>]*>)[^<]*/, '$1184'),
      names: /macro_risk\.score/,
    },
  ],
  'HistoryRow.gravity': [
    { symbol: 'SPY', kind: 'equity_twap', edit: customdata(/Gravity Level \d+/, 2, 150), names: /archive\.\d{4}-\d\d-\d\d\.gravity/ },
  ],
  'HistoryRow.sma_composite': [
    {
      symbol: 'BTC',
      kind: 'crypto_sma_20w',
      edit: customdata(/Risk Level \d\.\d-\d\.\d/, 0, 1.5),
      names: /archive\.\d{4}-\d\d-\d\d\.sma_composite/,
    },
    {
      symbol: 'SPY',
      kind: 'equity_sma_composite',
      edit: firstPlain('Normalized Composite Risk', 2),
      names: /archive\.\d{4}-\d\d-\d\d\.sma_composite/,
    },
  ],
  'HistoryRow.twap_risk_level': [
    {
      symbol: 'BTC',
      kind: 'crypto_twap_risk',
      edit: rename(/Risk Level \d+/, 'Risk Level 11'),
      names: /archive\.\d{4}-\d\d-\d\d\.twap_risk_level/,
    },
  ],
  // The row's risk is its band's midpoint, as the reading's is: the same page refuses both.
  'HistoryRow.dca_risk': [
    { symbol: 'BTC', kind: 'dca_regression', edit: rename(/Risk Level \d\.\d-\d\.\d/, 'Risk Level 1.0-1.1'), names: /dca\.risk|dca_risk/ },
  ],
  // The as_published row takes the phase reading's completion: refused with the reading.
  'HistoryRow.phase_completion_pct': [
    { symbol: 'BTC', kind: 'crypto_phase', edit: card('Cycle Completion Matrix', '1000000%'), names: /phase\.completion_pct/ },
  ],
};

describe('every scaled field of the contract', () => {
  it('carries its scale in the served document and has a page case here, or is derived from one that does', () => {
    const found = scaledFields();
    expect(found.get('Phase.completion_pct')).toBe('0-100');
    expect(found.get('HistoryRow.gravity')).toBe('0-100');
    expect(found.get('Dca.risk')).toBe('0-1');
    expect(found.get('Twap.risk_level')).toBe('1-10');
    const covered = new Set([...Object.keys(CASES), ...Object.keys(DERIVED), ...Object.keys(NOT_A_SCALE)]);
    expect(
      [...found.keys()].filter((f) => !covered.has(f)),
      'scaled fields with no page case: add one to CASES above (a page of its kind edited to a value past each bound), ' +
        'or to DERIVED for a field the build computes from one that has a case',
    ).toEqual([]);
    expect(
      [...covered].filter((f) => !found.has(f)),
      'cases for fields the contract no longer scales: remove them',
    ).toEqual([]);
  });

  const cases = Object.entries(CASES).flatMap(([field, list]) => list.map((c) => [field, c.file ?? fileOf(c.symbol!, c.kind), c] as const));
  it.each(cases)('%s out of scale on %s: the page is refused, naming the file and the field', async (_field, file, c) => {
    const pages = join(dir, 'edited');
    const html = readFileSync(join(dir, file), 'utf8');
    const edited = c.edit(html);
    expect(edited, 'the case edit changed nothing').not.toBe(html);
    mkdirSync(pages, { recursive: true });
    writeFileSync(join(pages, file), edited);
    const outcome = await parsePage({ dir: pages, file, kind: c.kind, archive: true });
    expect('error' in outcome && outcome.error.message).toMatch(new RegExp(`^${file.replace(/\./g, '\\.')}: `));
    expect('error' in outcome && outcome.error.field).toMatch(c.names);
    // The same page as published parses.
    writeFileSync(join(pages, file), html);
    expect(await parsePage({ dir: pages, file, kind: c.kind, archive: true })).toHaveProperty('result');
  });
});
