/** `{ID}_Price_TWAP_Risk_Analysis.html`: the separate 1-10 TWAP risk level, and its premium series for history. */
import { PageError } from '../errors.js';
import { loadChrome } from '../html.js';
import { defineKind } from '../kind.js';
import { notPrinted, round2OrNull } from '../numbers.js';
import { customRow, lastPoint, readFigure, series, traceNamed } from '../plotly.js';
import { TwapRiskReading, validated, type Archive } from '../readings.js';
import { parseStamp } from '../stamps.js';
import { weeklyBandPoints } from '../weekly.js';

const MODEL = 'twap_risk_level_crypto@1';

export const cryptoTwapRisk = defineKind({
  name: 'crypto_twap_risk',
  published: { by: 'asset', assetClass: 'CRYPTO', files: (id) => [`${id}_Price_TWAP_Risk_Analysis.html`] },
  readings: ['twap_risk'],
  archive: true,
  cadence: 'daily',
  parse(page, file, { archive: mine }) {
    const fig = readFigure(page, file);
    const chrome = loadChrome(page, [fig], file);
    const as_of = parseStamp(chrome.stamp('UPDATED'), file, 'stamp "UPDATED"');
    const card = chrome.requireCard('TWAP Risk Level (1-10)');
    let risk_level: number | null = null;
    if (!notPrinted(card.value)) {
      const m = /^Level (\d+)$/.exec(card.value);
      if (!m) throw new PageError(file, 'card "TWAP Risk Level (1-10)"', `expected "Level k", found "${card.value}"`);
      risk_level = Number(m[1]);
    }

    const price = series(traceNamed(fig.traces, 'Price Trend', file), file);
    lastPoint(price, file, 'trace "Price Trend"');
    const archive: Archive | undefined = mine ? {} : undefined;
    // Risk-level traces are picked by name, never by position: the VWAP trace came in between them and the price.
    if (archive)
      for (const { week, hit } of weeklyBandPoints(price, fig.traces, /^Risk Level (\d+)$/, file)) {
        if (hit)
          archive[week] = {
            twap_risk_level: Number(hit.match[1]),
            twap_premium_pct: round2OrNull(customRow(hit.trace, hit.index, file)[0]),
          };
      }
    return {
      twap_risk: validated(
        TwapRiskReading,
        { risk_level, risk_level_model: MODEL, as_of, as_of_basis: 'page_stamp', model: MODEL, source_page: file },
        file,
        'twap',
      ),
      archive,
      identity: chrome.identity(),
    };
  },
});
