/**
 * Step: parameters. The shape of what the caller sent (path symbol or universe, the history and bulk queries),
 * checked strictly before anything is looked up (decisions 4, 5, 9 and 34); a bad one is refused with a 400.
 */
import {
  BULK_MAX_SYMBOLS,
  HISTORY_DEFAULT_LIMIT,
  HISTORY_MAX_LIMIT,
  PLAN_LIMITS,
  SYMBOL_PATTERN,
  UNIVERSE_PATTERN,
  isCalendarDate,
  type Plan,
} from '../../generator/contract/index.js';
import type { PageQuery } from '../../generator/contract/history-page.js';
import { Refusal } from '../refusal.js';

/** A path symbol of the spec's shape (decision 11 matches it case-insensitively later). */
export function symbolParam(symbol: string): string {
  if (!SYMBOL_PATTERN.test(symbol)) throw new Refusal('bad_symbol', 'A symbol is 1 to 20 letters, digits, _ . -');
  return symbol;
}

/** A universe name of the decided shape (decision 9). */
export function universeParam(universe: string): string {
  if (!UNIVERSE_PATTERN.test(universe)) throw new Refusal('bad_universe', 'A universe name is 1 to 40 letters, digits, _ or -');
  return universe;
}

function once(params: URLSearchParams, name: string): string | undefined {
  const all = params.getAll(name);
  if (all.length > 1) throw new Refusal('bad_parameter', `${name} is given ${all.length} times; give it once`);
  return all[0];
}

function date(name: string, v: string | undefined): string | undefined {
  if (v === undefined || isCalendarDate(v)) return v;
  throw new Refusal('bad_parameter', `${name} must be a date YYYY-MM-DD`);
}

/** History's page query: its cursor is a row's date. */
export const historyQuery = (params: URLSearchParams, plan: Plan): PageQuery => pageQuery(params, plan, (v) => date('cursor', v));

/** The change feed's page query (decision 34): its cursor is an event's position in the feed. */
export const changesQuery = (params: URLSearchParams, plan: Plan): PageQuery =>
  pageQuery(params, plan, (v) => {
    if (v === undefined || /^[0-9]{1,10}$/.test(v)) return v;
    throw new Refusal('bad_parameter', "cursor must be a position in the feed, as a page's next_cursor gives it");
  });

/** limit, cursor, from, to: a page query with the plan's cap applied. */
function pageQuery(params: URLSearchParams, plan: Plan, cursor: (v: string | undefined) => string | undefined): PageQuery {
  const values: Record<string, string | undefined> = {};
  for (const name of ['limit', 'cursor', 'from', 'to']) values[name] = once(params, name);
  let limit = HISTORY_DEFAULT_LIMIT;
  if (values.limit !== undefined) {
    // An integer as JSON Schema counts one: 100 and 100.0 alike, as the document's `type: integer` lets a client send.
    if (!/^[0-9]{1,4}(\.0{1,4})?$/.test(values.limit) || +values.limit < 1 || +values.limit > HISTORY_MAX_LIMIT) {
      throw new Refusal('bad_parameter', `limit must be an integer from 1 to ${HISTORY_MAX_LIMIT}`);
    }
    limit = +values.limit;
  }
  const q: PageQuery = { limit: Math.min(limit, PLAN_LIMITS[plan].historyCap), maxLimit: PLAN_LIMITS[plan].historyCap };
  const c = cursor(values.cursor);
  if (c !== undefined) q.cursor = c;
  for (const name of ['from', 'to'] as const) {
    const d = date(name, values[name]);
    if (d !== undefined) q[name] = d;
  }
  if (q.from && q.to && q.from > q.to) throw new Refusal('bad_parameter', `from (${q.from}) is after to (${q.to})`);
  return q;
}

/** The bulk `symbols` list: 1 to 25 symbols of valid shape, as requested (empty entries from stray commas dropped). */
export function bulkSymbols(params: URLSearchParams): string[] {
  const raw = once(params, 'symbols');
  const list = (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (list.length === 0) throw new Refusal('bad_parameter', 'symbols is required: a comma-separated list of 1 to 25 symbols');
  if (list.length > BULK_MAX_SYMBOLS)
    throw new Refusal('too_many_symbols', `${list.length} symbols requested; at most ${BULK_MAX_SYMBOLS} per call`);
  const bad = list.find((s) => !SYMBOL_PATTERN.test(s));
  if (bad !== undefined) throw new Refusal('bad_symbol', `"${bad.slice(0, 20)}" is not a symbol: 1 to 20 letters, digits, _ . -`);
  return list;
}
