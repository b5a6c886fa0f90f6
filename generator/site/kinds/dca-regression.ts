/**
 * `*_lin_reg_price_with_risk.html`, every variant: crypto A (no premium printed), crypto B (premium printed),
 * equity (SPY/QQQ names). floor / fair value / ceiling are the regression lines at the last price date.
 */
import { PageError } from '../errors.js';
import { loadChrome } from '../html.js';
import { defineKind } from '../kind.js';
import { bandMidpoint } from '../models.js';
import { parsePrinted, round2, round2OrNull, sig8 } from '../numbers.js';
import {
  bandHolding,
  dateAt,
  lastPoint,
  onlyTrace,
  pointAt,
  readFigure,
  series,
  traceNamedIfAny,
  valueAt,
  type Series,
  type Trace,
} from '../plotly.js';
import { DcaReading, validated, type Archive } from '../readings.js';
import { weeklyBandPoints } from '../weekly.js';

const BAND = /^Risk Level (\d\.\d-\d\.\d)$/;
const LINES = {
  fair: ['Fair Value (Regression)', 'Fair Value Trendline'],
  ceiling: ['Peak Regression', 'Peak Euphoria'],
  floor: ['Bottom Regression', 'Max Capitulation'],
} as const;

/** A regression line under any of its names, with the names to say it by; two traces of them are refused. */
function line(traces: Trace[], names: readonly string[], file: string): { s: Series; field: string } | null {
  const t = traceNamedIfAny(traces, names, file);
  return t ? { s: series(t, file), field: `trace "${t.name}"` } : null;
}

/** A line at the price's last date: null where it has no point that day, refused where its point is no number. */
const at = (l: { s: Series; field: string } | null, date: string, file: string): number | null => {
  const v = l && pointAt(l.s, date, file, l.field, l.s.x.length - 1);
  return v === null ? null : sig8(v);
};

export const dcaRegression = defineKind({
  name: 'dca_regression',
  published: {
    by: 'asset',
    assetClass: 'ANY',
    files: (id) => [`${id}_lin_reg_price_with_risk.html`, `${id.toLowerCase()}_lin_reg_price_with_risk.html`],
  },
  readings: ['dca'],
  archive: true,
  cadence: 'daily',
  parse(page, file, { archive: mine }) {
    const fig = readFigure(page, file);
    const chrome = loadChrome(page, [fig], file);
    // The price series is the page's one unnamed line; the projections are named `Future *`.
    const priceTrace = onlyTrace(fig.traces, (t) => t.name === undefined && t.mode === 'lines', 'price trace (the unnamed line)', file);
    if (!priceTrace) throw new PageError(file, 'price trace', 'no unnamed price line among the traces');
    const price = series(priceTrace, file);
    const end = lastPoint(price, file, 'price trace');
    const band = bandHolding(fig.traces, BAND, end.date, file);
    if (!band) throw new PageError(file, 'trace "Risk Level a-b"', `no band trace holds the last price date ${end.date}`);

    const fair = line(fig.traces, LINES.fair, file);
    const fairValue = at(fair, end.date, file);
    const priceValue = sig8(end.value);
    const printed = chrome.card('Premium / Discount');
    let premium_pct: number | null;
    let premium_source: 'printed' | 'derived' | 'unavailable';
    if (printed) {
      premium_pct = parsePrinted(printed.value, file, 'card "Premium / Discount"');
      premium_source = premium_pct === null ? 'unavailable' : 'printed';
    } else if (fairValue !== null && fairValue !== 0) {
      premium_pct = round2((priceValue / fairValue - 1) * 100);
      premium_source = 'derived';
    } else {
      premium_pct = null;
      premium_source = 'unavailable';
    }

    const archive: Archive | undefined = mine ? {} : undefined;
    if (archive)
      for (const { week, index: i, hit } of weeklyBandPoints(price, fig.traces, BAND, file, (k) => Number.isFinite(price.values[k]!))) {
        const f = fair ? valueAt(fair.s, dateAt(price, i), i) : NaN;
        archive[week] = {
          dca_band: hit ? hit.match[1]! : null,
          dca_risk: hit ? bandMidpoint(hit.match[1]!) : null,
          dca_premium_pct: f !== 0 ? round2OrNull((price.values[i]! / f - 1) * 100) : null,
        };
      }
    return {
      dca: validated(
        DcaReading,
        {
          band: band.match[1],
          risk: bandMidpoint(band.match[1]!),
          price: priceValue,
          fair_value: fairValue,
          floor: at(line(fig.traces, LINES.floor, file), end.date, file),
          ceiling: at(line(fig.traces, LINES.ceiling, file), end.date, file),
          premium_pct,
          premium_source,
          reading_date: end.date,
          as_of: end.date,
          as_of_basis: 'trace_end',
          model: 'dca_regression@1',
          source_page: file,
        },
        file,
        'dca',
      ),
      archive,
      identity: chrome.identity(),
    };
  },
});
