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

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2}))?$/;
/**
 * An ISO 8601 instant in milliseconds, or NaN: a date (its midnight UTC), or a date and time with its zone (`Z` or an
 * offset). A time without a zone is local time to `Date.parse`, another instant on each machine, so it is refused.
 */
export const isoInstantMs = (v: string): number => (ISO_INSTANT.test(v) && isCalendarDate(v.slice(0, 10)) ? Date.parse(v) : NaN);
