/** `{ID}_Price_TWAP_Gravity_Analysis.html`: Gravity, TWAP baseline and premium, and the asset's price. */
import { PageError } from '../errors.js';
import { levelOfStyle, loadChrome } from '../html.js';
import { defineKind } from '../kind.js';
import { verdict } from '../models.js';
import { parsePrinted, sig8 } from '../numbers.js';
import { bandHolding, lastPoint, readFigure, series, traceNamed } from '../plotly.js';
import { GravityReading, PriceReading, TwapReading, validated } from '../readings.js';
import { parseStamp } from '../stamps.js';
import { lastOfWeek } from '../weekly.js';

const MODEL = 'twap_gravity_crypto@1';

export const cryptoGravity = defineKind({
  name: 'crypto_gravity',
  published: { by: 'asset', assetClass: 'CRYPTO', files: (id) => [`${id}_Price_TWAP_Gravity_Analysis.html`] },
  readings: ['gravity', 'twap', 'price'],
  archive: true,
  cadence: 'daily',
  parse(page, file, { archive }) {
    const fig = readFigure(page, file);
    const chrome = loadChrome(page, [fig], file);
    const price = series(traceNamed(fig.traces, 'Price Trend', file), file);
    const end = lastPoint(price, file, 'trace "Price Trend"');
    const as_of = parseStamp(chrome.stamp('LAST UPDATED'), file, 'stamp "LAST UPDATED"');

    const scoreCard = chrome.requireCard('Gravity Risk (0-100)');
    const score = parsePrinted(scoreCard.value, file, 'card "Gravity Risk (0-100)"');
    if (score === null) throw new PageError(file, 'card "Gravity Risk (0-100)"', `expected a score, found "${scoreCard.value}"`);
    const band = bandHolding(fig.traces, /^Risk Level (\d+)$/, end.date, file);
    const level = levelOfStyle(scoreCard.style) ?? (band ? Number(band.match[1]) : undefined);
    if (level === undefined)
      throw new PageError(file, 'card "Gravity Risk (0-100)" colour', `no level colour and no "Risk Level k" trace holds ${end.date}`);

    const common = { as_of, as_of_basis: 'page_stamp' as const, model: MODEL, source_page: file };
    return {
      gravity: validated(GravityReading, { score, risk_level: level, verdict: verdict(score, 'CRYPTO'), ...common }, file, 'gravity'),
      twap: validated(
        TwapReading,
        {
          baseline: chrome.printed('Lifetime TWAP Base'),
          premium_pct: chrome.printed('Market Premium'),
          ...common,
        },
        file,
        'twap',
      ),
      price: validated(PriceReading, { value: sig8(end.value), currency: 'USD', source_page: file, date: end.date }, file, 'price'),
      archive: archive
        ? Object.fromEntries(
            [...lastOfWeek(price.x, (i) => Number.isFinite(price.values[i]!))].map(([week, i]) => [
              week,
              { price: sig8(price.values[i]!) },
            ]),
          )
        : undefined,
      identity: chrome.identity(),
    };
  },
});
