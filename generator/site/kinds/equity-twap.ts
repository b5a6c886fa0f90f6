/** `{ID}_Equities_TWAP.html`: equity Gravity (2020 baseline), TWAP and price. No stamp: dated by its last close. */
import { PageError } from '../errors.js';
import { loadChrome } from '../html.js';
import { defineKind } from '../kind.js';
import { verdict } from '../models.js';
import { parsePrinted, round2OrNull, sig8 } from '../numbers.js';
import { bandHolding, customRow, lastPoint, readFigure, series, traceNamed } from '../plotly.js';
import { GravityReading, PriceReading, TwapReading, validated, type Archive } from '../readings.js';
import { weeklyBandPoints } from '../weekly.js';

const LEVEL = /^Gravity Level (\d+)$/;

const MODEL = 'twap_gravity_equity@1';

export const equityTwap = defineKind({
  name: 'equity_twap',
  published: { by: 'asset', assetClass: 'EQUITY', files: (id) => [`${id}_Equities_TWAP.html`] },
  readings: ['gravity', 'twap', 'price'],
  archive: true,
  cadence: 'daily',
  parse(page, file, { archive: mine }) {
    const fig = readFigure(page, file);
    const chrome = loadChrome(page, [fig], file);
    const price = series(traceNamed(fig.traces, 'Daily Spot', file), file);
    const end = lastPoint(price, file, 'trace "Daily Spot"');
    const scoreCard = chrome.requireCard('GRAVITY RISK');
    const score = parsePrinted(scoreCard.value, file, 'card "GRAVITY RISK"');
    if (score === null) throw new PageError(file, 'card "GRAVITY RISK"', `expected a score, found "${scoreCard.value}"`);
    const band = bandHolding(fig.traces, LEVEL, end.date, file);
    const level = band ? Number(band.match[1]) : Math.min(10, Math.floor(score / 10) + 1);
    const common = { as_of: end.date, as_of_basis: 'trace_end' as const, model: MODEL, source_page: file };

    const archive: Archive | undefined = mine ? {} : undefined;
    if (archive)
      for (const { week, index: i, hit } of weeklyBandPoints(price, fig.traces, LEVEL, file, (k) => Number.isFinite(price.values[k]!))) {
        const row = hit ? customRow(hit.trace, hit.index, file) : undefined;
        archive[week] = { price: sig8(price.values[i]!), twap_premium_pct: round2OrNull(row?.[0]), gravity: round2OrNull(row?.[2]) };
      }
    return {
      gravity: validated(GravityReading, { score, risk_level: level, verdict: verdict(score, 'EQUITY'), ...common }, file, 'gravity'),
      twap: validated(
        TwapReading,
        {
          baseline: chrome.printed('EXPANDING TWAP'),
          premium_pct: chrome.printed('PREMIUM / DISCOUNT'),
          ...common,
        },
        file,
        'twap',
      ),
      price: validated(PriceReading, { value: sig8(end.value), currency: 'USD', source_page: file, date: end.date }, file, 'price'),
      archive,
      identity: chrome.identity(),
    };
  },
});
