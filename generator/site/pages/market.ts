/** Market-wide pages: crypto fear & greed, crypto peak/valley, sector widgets and feed, the market-cap ranking. */
import { z } from 'zod';
import { PageError, describe } from '../errors.js';
import { loadChrome } from '../html.js';
import { MODELS } from '../models.js';
import { parsePrinted } from '../numbers.js';
import { lastPoint, readFigure, readFigures, series, traceNamed } from '../plotly.js';
import { FearGreedReading, MacroRiskReading, PeakValleyReading, validated, type PageResult, type SectorReadings } from '../readings.js';
import { parseDate, parseStamp } from '../stamps.js';

const FNG_LABELS = ['extreme fear', 'fear', 'neutral', 'greed', 'extreme greed'];
export const FNG_PROVIDER = 'alternative.me';
export const SECTOR_PROVIDER = 'site sector engine';

export function parseCryptoFearGreed(page: Buffer, file: string): PageResult {
  const figures = readFigures(page, file);
  const gauge = figures.flatMap((f) => f.traces).find((t) => t.type === 'indicator');
  if (!gauge) throw new PageError(file, 'gauge', 'no indicator trace on the page');
  const steps = (gauge.gauge as { steps?: { range?: number[] }[] } | undefined)?.steps;
  if (!Array.isArray(steps) || steps.length !== FNG_LABELS.length)
    throw new PageError(file, 'gauge.steps', `expected the ${FNG_LABELS.length}-band table, found ${describe(JSON.stringify(steps))}`);
  const trend = figures.flatMap((f) => f.traces).find((t) => t.name === 'BTC Base Trend');
  if (!trend) throw new PageError(file, 'trace "BTC Base Trend"', 'absent');
  const end = lastPoint(series(trend, file), file, 'trace "BTC Base Trend"');
  const chrome = loadChrome(page, figures, file);
  const value = chrome.printed('Daily Fear & Greed');
  const sma_30 = chrome.printed('30-Day Sentiment SMA');
  // On its scale before the band table is read: a value off it is named as the field it is, not as a missing band.
  validated(FearGreedReading.pick({ value: true, sma_30: true }), { value, sma_30 }, file, 'fear_greed');
  let label: string | null = null;
  if (value !== null) {
    const i = steps.findIndex(
      (s, k) => Array.isArray(s.range) && value >= s.range[0]! && (value < s.range[1]! || (k === steps.length - 1 && value <= s.range[1]!)),
    );
    if (i < 0) throw new PageError(file, 'gauge.steps', `no band holds the value ${value}`);
    label = FNG_LABELS[i]!;
  }
  return {
    file,
    kind: 'crypto_fear_greed',
    symbol: null,
    fear_greed: validated(
      FearGreedReading,
      {
        value,
        label,
        label_source: 'site_band_table',
        sma_30,
        provider: FNG_PROVIDER,
        scope: 'market',
        model: MODELS.fearGreedCrypto,
        as_of: end.date,
        as_of_basis: 'trace_end',
        source_page: file,
      },
      file,
      'fear_greed',
    ),
  };
}

export function parseCryptoPeakValley(page: Buffer, file: string): PageResult {
  const fig = readFigure(page, file);
  traceNamed(fig.traces, 'Leading (BTC+ETH)', file);
  const chrome = loadChrome(page, [fig], file);
  const value = chrome.byId('metric-value');
  if (value === undefined) throw new PageError(file, '#metric-value', 'absent from the page');
  const zone = chrome.byId('metric-label');
  return {
    file,
    kind: 'crypto_peak_valley',
    symbol: null,
    peak_valley: validated(
      PeakValleyReading,
      {
        score: parsePrinted(value, file, '#metric-value'),
        zone: zone === undefined || /^(N\/A|—|-|)$/.test(zone) ? null : zone,
        // The site's own API names the series by an identifier (decision 29).
        series: 'leading_btc_eth',
        scope: 'market',
        model: MODELS.peakValleyCrypto,
        as_of: parseStamp(chrome.stamp('LAST UPDATE'), file, 'stamp "LAST UPDATE"'),
        as_of_basis: 'page_stamp',
        source_page: file,
      },
      file,
      'peak_valley',
    ),
  };
}

export const WIDGET_UNIVERSE: Record<string, string> = {
  'widget_ai_indicators.html': 'ai_infrastructure',
  'widget_quantum_indicators.html': 'quantum',
  'widget_bitcoin_equities_indicators.html': 'bitcoin_equities',
  'widget_markets_indicators.html': 'us_stock_market',
};

function sector(
  parts: {
    fg: number | null;
    fgLabel: string | null;
    sma: number | null;
    pv: number | null;
    zone: string | null;
    macro: number | null;
    status: string | null;
  },
  as_of: string,
  basis: 'page_stamp' | 'feed_generated_at',
  file: string,
): SectorReadings {
  const context = { scope: 'sector' as const, model: MODELS.sector, as_of, as_of_basis: basis, source_page: file };
  return {
    fear_greed: validated(
      FearGreedReading,
      { value: parts.fg, label: parts.fgLabel, label_source: 'engine', sma_30: parts.sma, provider: SECTOR_PROVIDER, ...context },
      file,
      'fear_greed',
    ),
    peak_valley: validated(
      PeakValleyReading,
      { score: parts.pv, zone: parts.zone, series: 'leading_sector', ...context },
      file,
      'peak_valley',
    ),
    macro_risk: validated(MacroRiskReading, { score: parts.macro, status: parts.status, ...context }, file, 'macro_risk'),
  };
}

export function parseSectorWidget(page: Buffer, file: string): PageResult {
  const universe = WIDGET_UNIVERSE[file];
  if (!universe) throw new PageError(file, 'file name', 'not a known sector widget');
  const { $ } = loadChrome(page, [], file);
  const tile = (kind: string) => {
    const t = $(`article.tile-${kind}`).first();
    if (t.length === 0) throw new PageError(file, `tile "${kind}"`, 'absent from the strip');
    return t;
  };
  const pill = (kind: string) => {
    const text = tile(kind).find('.pill').first().text().trim();
    return text === '' ? null : text;
  };
  const fg = tile('fear_greed');
  const marker = /left:\s*([0-9.]+)%/.exec(fg.find('.meter-marker').attr('style') ?? '');
  const foot = /30-day average\s+(\S+)/.exec(fg.find('.tile-foot').text());
  const close = /market close\s+(\S+)/.exec($('.strip-foot').text());
  if (!close) throw new PageError(file, 'strip foot "market close"', 'absent');
  return {
    file,
    kind: 'sector_widget',
    symbol: null,
    sectors: {
      [universe]: sector(
        {
          fg: marker
            ? parsePrinted(marker[1], file, 'tile "fear_greed" marker')
            : parsePrinted(fg.find('.score').text(), file, 'tile "fear_greed" score'),
          fgLabel: pill('fear_greed'),
          sma: foot ? parsePrinted(foot[1], file, 'tile "fear_greed" 30-day average') : null,
          pv: parsePrinted(tile('peak_valley').find('.score').text(), file, 'tile "peak_valley" score'),
          zone: pill('peak_valley'),
          macro: parsePrinted(tile('macro_risk').find('.score').text(), file, 'tile "macro_risk" score'),
          status: pill('macro_risk'),
        },
        parseDate(close[1], file, 'strip foot "market close"'),
        'page_stamp',
        file,
      ),
    },
  };
}

const nullableNum = z.number().finite().nullable();
const FeedSchema = z.object({
  schema: z.literal(1),
  generated_at: z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?Z$/),
  universes: z.record(
    z.string(),
    z.object({
      fear_greed: z.object({ value: nullableNum, label: z.string().nullable(), sma_30: nullableNum }),
      peak_valley: z.object({ score: nullableNum, zone: z.string().nullable() }),
      macro_risk: z.object({ score: nullableNum, status: z.string().nullable() }),
    }),
  ),
});

export function parseSectorFeed(page: Buffer, file: string): PageResult {
  let json: unknown;
  try {
    json = JSON.parse(page.toString('utf8'));
  } catch (e) {
    throw new PageError(file, '(document)', `not JSON: ${(e as Error).message}`);
  }
  const feed = validated(FeedSchema, json, file, 'feed');
  const as_of = feed.generated_at.slice(0, 16) + ':00Z';
  const sectors: Record<string, SectorReadings> = {};
  for (const [u, s] of Object.entries(feed.universes)) {
    sectors[u] = sector(
      {
        fg: s.fear_greed.value,
        fgLabel: s.fear_greed.label,
        sma: s.fear_greed.sma_30,
        pv: s.peak_valley.score,
        zone: s.peak_valley.zone,
        macro: s.macro_risk.score,
        status: s.macro_risk.status,
      },
      as_of,
      'feed_generated_at',
      file,
    );
  }
  return { file, kind: 'sector_feed', symbol: null, sectors };
}

const RankRecord = z.object({ Ticker: z.string().min(1), Market_Cap_Rank: z.number().int().positive() });

export function parseRanking(page: Buffer, file: string): PageResult {
  const html = page.toString('utf8');
  const at = html.indexOf('const rawData');
  if (at < 0) throw new PageError(file, 'rawData', 'no `const rawData = [...]` on the page');
  const start = html.indexOf('[', at);
  const stop = html.indexOf('const dcaRawBundle', start);
  const body = html
    .slice(start, stop < 0 ? undefined : stop)
    .trim()
    .replace(/;\s*$/, '');
  let records: unknown;
  try {
    records = JSON.parse(body);
  } catch (e) {
    throw new PageError(file, 'rawData', `not strict JSON (${(e as Error).message})`);
  }
  const list = validated(z.array(RankRecord), records, file, 'rawData');
  return { file, kind: 'market_cap_ranking', symbol: null, ranking: list.map((r) => ({ symbol: r.Ticker, rank: r.Market_Cap_Rank })) };
}
