/** Weekly sampling for weekly_archive rows: each week is labelled by its closing Sunday and keeps its last point. */
import { dayDate } from './dates.js';
import { bandIndex, type Series, type Trace } from './plotly.js';
import type { Dates } from './dates.js';

const labels = new Map<number, string>();
/** The Sunday on or after day `n` (days since 1970-01-01, a Thursday), as `YYYY-MM-DD`. */
function sundayOf(n: number): string {
  const sunday = n + ((7 - ((n + 4) % 7)) % 7);
  let s = labels.get(sunday);
  if (s === undefined) labels.set(sunday, (s = dayDate(sunday)));
  return s;
}

/** For each week, the index of the last date in it (dates ascending; points failing `keep` skipped). */
export function lastOfWeek(dates: Dates, keep: (i: number) => boolean = () => true): Map<string, number> {
  const out = new Map<string, number>();
  let week = NaN;
  let label = '';
  for (let i = 0; i < dates.length; i++) {
    if (!keep(i)) continue;
    // Monday to Sunday share floor((n + 3) / 7): the label is recomputed only when the week changes.
    const n = dates.day(i);
    const w = Math.floor((n + 3) / 7);
    if (w !== week) [week, label] = [w, sundayOf(n)];
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
  const bands = bandIndex(
    traces,
    pattern,
    [...weeks.values()].map((i) => price.x.day(i)),
    file,
  );
  return [...weeks].map(([week, index]) => ({ week, index, hit: bands.get(price.x.day(index)) }));
}
