/** `BTC_Unified_FNG_Matrix.html`: the crypto fear & greed index as the site reprints it, labelled by its own band table. */
import { PageError, describe } from '../errors.js';
import { loadChrome } from '../html.js';
import { defineKind } from '../kind.js';
import { lastPoint, readFigures, series, traceNamedIfAny } from '../plotly.js';
import { FearGreedReading, validated } from '../readings.js';

/** The gauge's bands, lowest first, as the API labels them (lower-cased). */
const LABELS = ['extreme fear', 'fear', 'neutral', 'greed', 'extreme greed'];

export const cryptoFearGreed = defineKind({
  name: 'crypto_fear_greed',
  published: { by: 'market', files: ['BTC_Unified_FNG_Matrix.html'] },
  readings: ['fear_greed'],
  archive: false,
  cadence: 'daily',
  parse(page, file) {
    const figures = readFigures(page, file);
    const gauge = figures.flatMap((f) => f.traces).find((t) => t.type === 'indicator');
    if (!gauge) throw new PageError(file, 'gauge', 'no indicator trace on the page');
    const steps = (gauge.gauge as { steps?: { range?: number[] }[] } | undefined)?.steps;
    if (!Array.isArray(steps) || steps.length !== LABELS.length)
      throw new PageError(file, 'gauge.steps', `expected the ${LABELS.length}-band table, found ${describe(JSON.stringify(steps))}`);
    const trend = traceNamedIfAny(
      figures.flatMap((f) => f.traces),
      'BTC Base Trend',
      file,
    );
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
        (s, k) =>
          Array.isArray(s.range) && value >= s.range[0]! && (value < s.range[1]! || (k === steps.length - 1 && value <= s.range[1]!)),
      );
      if (i < 0) throw new PageError(file, 'gauge.steps', `no band holds the value ${value}`);
      label = LABELS[i]!;
    }
    return {
      fear_greed: validated(
        FearGreedReading,
        {
          value,
          label,
          label_source: 'site_band_table',
          sma_30,
          provider: 'alternative.me',
          scope: 'market',
          model: 'fear_greed_crypto@1',
          as_of: end.date,
          as_of_basis: 'trace_end',
          source_page: file,
        },
        file,
        'fear_greed',
      ),
    };
  },
});
