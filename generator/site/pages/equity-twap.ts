/** `{ID}_Equities_TWAP.html`: equity Gravity (2020 baseline), TWAP and price. No stamp: dated by its last close. */
import { PageError } from '../errors.js';
import { loadChrome, requireCard } from '../html.js';
import { MODELS, verdict } from '../models.js';
import { parsePrinted, round2, sig8 } from '../numbers.js';
import { bandHolding, bandIndex, customRow, lastPoint, readFigure, series, traceNamed } from '../plotly.js';
import { GravityReading, PriceReading, TwapReading, validated, type Archive, type PageResult } from '../readings.js';
import { lastOfWeek } from '../weekly.js';

const LEVEL = /^Gravity Level (\d+)$/;

export function parseEquityTwap(html: string, file: string): PageResult {
  const fig = readFigure(html, file);
  const $ = loadChrome(html, [fig]);
  const price = series(traceNamed(fig.traces, 'Daily Spot', file), file);
  const end = lastPoint(price, file, 'trace "Daily Spot"');
  const scoreCard = requireCard($, 'div.card-lbl', 'GRAVITY RISK', file);
  const score = parsePrinted(scoreCard.value, file, 'card "GRAVITY RISK"');
  if (score === null) throw new PageError(file, 'card "GRAVITY RISK"', `expected a score, found "${scoreCard.value}"`);
  const band = bandHolding(fig.traces, LEVEL, end.date, file);
  const level = band ? Number(band.match[1]) : Math.min(10, Math.floor(score / 10) + 1);
  const common = { as_of: end.date, as_of_basis: 'trace_end' as const, model: MODELS.gravityEquity, source_page: file };

  const weeks = lastOfWeek(price.x, (k) => Number.isFinite(price.values[k]!));
  const levels = bandIndex(fig.traces, LEVEL, [...weeks.values()].map((i) => price.x[i]!), file);
  const archive: Archive = {};
  for (const [week, i] of weeks) {
    const hit = levels.get(price.x[i]!);
    const row = hit ? customRow(hit.trace, hit.index, file) : undefined;
    archive[week] = {
      price: sig8(price.values[i]!),
      twap_premium_pct: row && Number.isFinite(row[0]!) ? round2(row[0]!) : null,
      gravity: row && Number.isFinite(row[2]!) ? round2(row[2]!) : null,
    };
  }
  return {
    file, kind: 'equity_twap', symbol: null,
    gravity: validated(GravityReading, { score, risk_level: level, verdict: verdict(score, 'EQUITY'), ...common }, file, 'gravity'),
    twap: validated(TwapReading, {
      baseline: parsePrinted(requireCard($, 'div.card-lbl', 'EXPANDING TWAP', file).value, file, 'card "EXPANDING TWAP"'),
      premium_pct: parsePrinted(requireCard($, 'div.card-lbl', 'PREMIUM / DISCOUNT', file).value, file, 'card "PREMIUM / DISCOUNT"'),
      ...common,
    }, file, 'twap'),
    price: validated(PriceReading, { value: sig8(end.value), currency: 'USD', source_page: file, date: end.date }, file, 'price'),
    archive,
  };
}
