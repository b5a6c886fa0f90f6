/** Ordering `as_of` values: a bare date counts from its midnight UTC. */
export const instant = (asOf: string): number => Date.parse(asOf.length === 10 ? `${asOf}T00:00:00Z` : asOf);

/** A date YYYY-MM-DD that exists on the calendar (2026-02-30 does not). */
export function isCalendarDate(v: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(v);
  return !!m && new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!)).toISOString().slice(0, 10) === v;
}

/** The newest of several as_of values (null when there is none). */
export function newest(values: (string | null | undefined)[]): string | null {
  let best: string | null = null;
  for (const v of values) if (v && (best === null || instant(v) > instant(best))) best = v;
  return best;
}
