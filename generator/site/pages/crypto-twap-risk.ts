/** `{ID}_Price_TWAP_Risk_Analysis.html`: the separate 1-10 TWAP risk level, and its premium series for history. */
import { PageError } from '../errors.js';
import { loadChrome } from '../html.js';
import { MODELS } from '../models.js';
import { notPrinted, round2OrNull } from '../numbers.js';
import { customRow, lastPoint, readFigure, series, traceNamed } from '../plotly.js';
import { TwapRiskReading, validated, type Archive, type PageResult } from '../readings.js';
import { parseStamp } from '../stamps.js';
import { weeklyBandPoints } from '../weekly.js';
import type { ParseOptions } from '../kinds.js';

export function parseCryptoTwapRisk(page: Buffer, file: string, { archive: mine = true }: Partial<ParseOptions> = {}): PageResult {
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
  if (archive)
    for (const { week, hit } of weeklyBandPoints(price, fig.traces, /^Risk Level (\d+)$/, file)) {
      if (hit)
        archive[week] = { twap_risk_level: Number(hit.match[1]), twap_premium_pct: round2OrNull(customRow(hit.trace, hit.index, file)[0]) };
    }
  return {
    file,
    kind: 'crypto_twap_risk',
    symbol: null,
    twap_risk: validated(
      TwapRiskReading,
      {
        risk_level,
        risk_level_model: MODELS.twapRiskCrypto,
        as_of,
        as_of_basis: 'page_stamp',
        model: MODELS.twapRiskCrypto,
        source_page: file,
      },
      file,
      'twap',
    ),
    archive,
    identity: chrome.identity(),
  };
}
