/** Weekly sampling for weekly_archive rows: each week is labelled by its closing Sunday and keeps its last point. */
const DAY = 86_400_000;

const labelCache = new Map<string, string>();
/** The Sunday on or after `date` (YYYY-MM-DD). */
export function weekLabel(date: string): string {
  let s = labelCache.get(date);
  if (s === undefined) {
    const t = Date.parse(date + 'T00:00:00Z');
    const dow = new Date(t).getUTCDay();
    s = new Date(t + ((7 - dow) % 7) * DAY).toISOString().slice(0, 10);
    labelCache.set(date, s);
  }
  return s;
}

/** For each week, the index of the last date in it (dates ascending; NaN-valued points skipped by `keep`). */
export function lastOfWeek(dates: string[], keep: (i: number) => boolean = () => true): Map<string, number> {
  const out = new Map<string, number>();
  for (let i = 0; i < dates.length; i++) if (keep(i)) out.set(weekLabel(dates[i]!), i);
  return out;
}
