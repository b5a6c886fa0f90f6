/** `{id}-usd_price_with_risk.html`: the 20-week SMA risk (printed 0-1, reported x100) and its tenth band. */
import { PageError } from '../errors.js';
import { loadChrome } from '../html.js';
import { defineKind } from '../kind.js';
import { parsePrinted, round2, round2OrNull } from '../numbers.js';
import { bandHolding, customRow, lastPoint, readFigure, series, traceNamed } from '../plotly.js';
import { SmaReading, validated, type Archive } from '../readings.js';
import { parseStamp } from '../stamps.js';
import { weeklyBandPoints } from '../weekly.js';

const BAND = /^Risk Level (\d\.\d-\d\.\d)$/;

export const cryptoSma20w = defineKind({
  name: 'crypto_sma_20w',
  published: {
    by: 'asset',
    assetClass: 'CRYPTO',
    files: (id) => [`${id.toLowerCase()}-usd_price_with_risk.html`],
  },
  readings: ['sma_composite'],
  archive: true,
  cadence: 'daily',
  parse(page, file, { archive: mine }) {
    const fig = readFigure(page, file);
    const chrome = loadChrome(page, [fig], file);
    const risk = chrome.find(/\|\s*Risk:\s*(\S+)/, 'header "Risk:"');
    if (risk === undefined) throw new PageError(file, 'header "Risk:"', 'no "| Risk: x" on the page');
    const page_value = parsePrinted(risk, file, 'header "Risk:"');
    if (page_value === null) throw new PageError(file, 'header "Risk:"', `expected a 0-1 risk, found "${risk}"`);
    const as_of = parseStamp(chrome.stamp('LAST UPDATE'), file, 'stamp "LAST UPDATE"');

    const price = series(traceNamed(fig.traces, 'Underlying Price', file), file);
    const end = lastPoint(price, file, 'trace "Underlying Price"');
    const band = bandHolding(fig.traces, BAND, end.date, file);
    if (!band) throw new PageError(file, 'trace "Risk Level a-b"', `no band trace holds the last price date ${end.date}`);

    const archive: Archive | undefined = mine ? {} : undefined;
    if (archive)
      for (const { week, hit } of weeklyBandPoints(price, fig.traces, BAND, file)) {
        if (hit) archive[week] = { sma_composite: round2OrNull(customRow(hit.trace, hit.index, file)[0]! * 100) };
      }
    return {
      sma_composite: validated(
        SmaReading,
        {
          score: round2(page_value * 100),
          page_value,
          band: band.match[1],
          as_of,
          as_of_basis: 'page_stamp',
          model: 'sma_20w_crypto@1',
          source_page: file,
        },
        file,
        'sma_composite',
      ),
      archive,
      identity: chrome.identity(),
    };
  },
});
