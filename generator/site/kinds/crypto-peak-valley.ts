/** `crypto_risk_normalized.html`: the crypto leading risk score (BTC + ETH) and its zone, quoted as printed. */
import { PageError } from '../errors.js';
import { loadChrome } from '../html.js';
import { defineKind } from '../kind.js';
import { notPrinted, parsePrinted } from '../numbers.js';
import { readFigure, traceNamed } from '../plotly.js';
import { PeakValleyReading, validated } from '../readings.js';
import { parseStamp } from '../stamps.js';

export const cryptoPeakValley = defineKind({
  name: 'crypto_peak_valley',
  published: { by: 'market', files: ['crypto_risk_normalized.html'] },
  readings: ['peak_valley'],
  archive: false,
  cadence: 'daily',
  parse(page, file) {
    const fig = readFigure(page, file);
    traceNamed(fig.traces, 'Leading (BTC+ETH)', file);
    const chrome = loadChrome(page, [fig], file);
    const value = chrome.byId('metric-value');
    if (value === undefined) throw new PageError(file, '#metric-value', 'absent from the page');
    const zone = chrome.byId('metric-label');
    return {
      peak_valley: validated(
        PeakValleyReading,
        {
          score: parsePrinted(value, file, '#metric-value'),
          zone: zone === undefined || notPrinted(zone) ? null : zone,
          // The site's own API names the series by an identifier (decision 29).
          series: 'leading_btc_eth',
          scope: 'market',
          model: 'peak_valley_crypto@1',
          as_of: parseStamp(chrome.stamp('LAST UPDATE'), file, 'stamp "LAST UPDATE"'),
          as_of_basis: 'page_stamp',
          source_page: file,
        },
        file,
        'peak_valley',
      ),
    };
  },
});
