/** Ordering `as_of` values: a bare date counts from its midnight UTC. */
export const instant = (asOf: string): number => Date.parse(asOf.length === 10 ? `${asOf}T00:00:00Z` : asOf);

/** The newest of several as_of values (null when there is none). */
export function newest(values: (string | null | undefined)[]): string | null {
  let best: string | null = null;
  for (const v of values) if (v && (best === null || instant(v) > instant(best))) best = v;
  return best;
}
