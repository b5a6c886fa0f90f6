/** Weekly sampling for weekly_archive rows: each week is labelled by its closing Sunday and keeps its last point. */
import { bandIndex, type Series, type Trace } from './plotly.js';
const DAY_MS = 86_400_000;

/** Day number (days since 1970-01-01) of `YYYY-MM-DD`, from its digits: no Date, no allocation. */
function dayNumber(d: string): number {
  const digit = (i: number) => d.charCodeAt(i) - 48;
  const y = digit(0) * 1000 + digit(1) * 100 + digit(2) * 10 + digit(3);
  const m = digit(5) * 10 + digit(6);
  const day = digit(8) * 10 + digit(9);
  return Date.UTC(y, m - 1, day) / DAY_MS;
}

const labels = new Map<number, string>();
/** The Sunday on or after `date` (YYYY-MM-DD). */
export function weekLabel(date: string): string {
  const n = dayNumber(date);
  const sunday = n + ((7 - ((n + 4) % 7)) % 7); // 1970-01-01 was a Thursday
  let s = labels.get(sunday);
  if (s === undefined) labels.set(sunday, (s = new Date(sunday * DAY_MS).toISOString().slice(0, 10)));
  return s;
}

/** For each week, the index of the last date in it (dates ascending; points failing `keep` skipped). */
export function lastOfWeek(dates: string[], keep: (i: number) => boolean = () => true): Map<string, number> {
  const out = new Map<string, number>();
  let week = NaN;
  let label = '';
  for (let i = 0; i < dates.length; i++) {
    if (!keep(i)) continue;
    // Monday to Sunday share floor((n + 3) / 7): the label is recomputed only when the week changes.
    const w = Math.floor((dayNumber(dates[i]!) + 3) / 7);
    if (w !== week) [week, label] = [w, weekLabel(dates[i]!)];
    out.set(label, i);
  }
  return out;
}

/**
 * The weekly points of a price series, each with the band trace (name matching `pattern`) that holds it, if any:
 * the shape every page's weekly archive is mined in.
 */
export function weeklyBandPoints(price: Series, traces: Trace[], pattern: RegExp, file: string, keep?: (i: number) => boolean) {
  const weeks = lastOfWeek(price.x, keep);
  const bands = bandIndex(traces, pattern, [...weeks.values()].map((i) => price.x[i]!), file);
  return [...weeks].map(([week, index]) => ({ week, index, hit: bands.get(price.x[index]!) }));
}
