/** The one pure function that cuts a page of the change feed from its ledger: the build and the shim share it. */
import { DISCLAIMER } from './constants.js';
import { envelopeAsOf, modelVersion } from './envelope.js';
import { isRecord } from './manifest-check.js';
import type { PageQuery } from './history-page.js';
import type { ChangeEvent, ChangeLedger, ChangesResponse } from './shapes.js';

export type { ChangeLedger } from './shapes.js';

/** Who reads the feed: a basic plan sees its own events (decision 34), pro and ultra see all. */
export type Audience = 'basic' | 'all';

/**
 * One page of the feed, oldest first, paged like history (decision 4): `from`/`to` are inclusive dates of
 * `published_at`, `cursor` is exclusive. An event's cursor is its position in the whole feed counted from 1, so a
 * cursor means the same to every plan and stays valid as the feed grows.
 */
export function changesPage(l: ChangeLedger, q: PageQuery, audience: Audience): ChangesResponse {
  const seen = audience === 'basic' ? l.basic : null;
  const count = seen ? seen.length : l.events.length;
  const position = (i: number) => (seen ? seen[i]! : i);
  const day = (i: number) => l.events[position(i)]!.published_at.slice(0, 10);
  // Events are appended in publication order, so the window and the cursor are bounds found by bisection.
  const lo = q.from ? firstWhere(count, (i) => day(i) >= q.from!) : 0;
  const hi = q.to ? firstWhere(count, (i) => day(i) > q.to!) : count;
  const after =
    q.cursor === undefined
      ? lo
      : Math.max(
          lo,
          firstWhere(count, (i) => position(i) + 1 > Number(q.cursor)),
        );
  const end = Math.max(after, Math.min(hi, after + q.limit));
  const events: ChangeEvent[] = [];
  for (let i = after; i < end; i++) events.push(l.events[position(i)]!);
  const readings = events.map((e) => ({ model: e.model ?? '', as_of: e.as_of }));
  return {
    as_of: envelopeAsOf(readings),
    model_version: modelVersion(readings.filter((r) => r.model)),
    disclaimer: DISCLAIMER,
    data: {
      started_at: l.started_at,
      from: events[0]?.published_at ?? null,
      through: events.at(-1)?.published_at ?? null,
      event_count: events.length,
      total_event_count: Math.max(0, hi - lo),
      limit: q.limit,
      max_limit: q.maxLimit,
      next_cursor: end < hi ? String(position(end - 1) + 1) : null,
      events,
    },
  } as ChangesResponse;
}

/** The first index in [0, n) where `test` holds, for a test that is false and then true; n when it never holds. */
function firstWhere(n: number, test: (i: number) => boolean): number {
  let [lo, hi] = [0, n];
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (test(mid)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/**
 * What a change ledger must be for the feed to be read and cut from it: events in publication order, each about an
 * asset or a universe, and basic's positions ascending within them. The build checks the previous ledger with it
 * before using it and the new one before publishing it. Each problem names the field.
 */
export function feedProblems(feed: unknown): string[] {
  if (!isRecord(feed) || typeof feed.started_at !== 'string' || !Array.isArray(feed.events) || !Array.isArray(feed.basic))
    return ['has no started_at, events and basic'];
  const events = feed.events as unknown[];
  const basic = feed.basic as unknown[];
  const p: string[] = [];
  let last = '';
  events.forEach((e, i) => {
    if (!isRecord(e) || typeof e.published_at !== 'string') return void p.push(`events[${i}] is not an event with a published_at`);
    if (e.published_at < last) p.push(`events[${i}].published_at ${e.published_at} is before the event it follows`);
    // Field by field the schema checks an event; this is the rule across its fields.
    const [symbol, universe] = [typeof e.symbol === 'string', typeof e.universe === 'string'];
    if ((symbol && universe) || (e.symbol === null && e.universe === null))
      p.push(`events[${i}] names both or neither of symbol and universe`);
    last = e.published_at;
  });
  if (
    !basic.every(
      (at, i) => Number.isInteger(at) && (at as number) < events.length && (i === 0 || (at as number) > (basic[i - 1] as number)),
    )
  )
    p.push('basic is not a list of positions in events, ascending');
  return p;
}
