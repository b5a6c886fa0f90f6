/** Query parameters of the history and bulk endpoints, checked strictly (decisions 4 and 5). */
import {
  BULK_MAX_SYMBOLS,
  HISTORY_DEFAULT_LIMIT,
  HISTORY_MAX_LIMIT,
  PLAN_LIMITS,
  SYMBOL_PATTERN,
  isCalendarDate,
  type Plan,
} from '../generator/contract/index.js';
import type { PageQuery } from '../generator/contract/history-page.js';

export type ParamError = { code: 'bad_parameter' | 'too_many_symbols' | 'bad_symbol'; message: string };

function once(params: URLSearchParams, name: string): string | undefined | ParamError {
  const all = params.getAll(name);
  if (all.length > 1) return { code: 'bad_parameter', message: `${name} is given ${all.length} times; give it once` };
  return all[0];
}
const isError = (v: unknown): v is ParamError => typeof v === 'object' && v !== null && 'code' in v;

function date(name: string, v: string | undefined): string | undefined | ParamError {
  if (v === undefined) return undefined;
  return isCalendarDate(v) ? v : { code: 'bad_parameter', message: `${name} must be a date YYYY-MM-DD` };
}

/** limit, cursor, from, to: a page query with the plan's cap applied, or the 400 to answer. */
export function historyQuery(params: URLSearchParams, plan: Plan): PageQuery | ParamError {
  const values: Record<string, string | undefined> = {};
  for (const name of ['limit', 'cursor', 'from', 'to']) {
    const v = once(params, name);
    if (isError(v)) return v;
    values[name] = v;
  }
  let limit = HISTORY_DEFAULT_LIMIT;
  if (values.limit !== undefined) {
    if (!/^[0-9]{1,4}$/.test(values.limit) || +values.limit < 1 || +values.limit > HISTORY_MAX_LIMIT) {
      return { code: 'bad_parameter', message: `limit must be an integer from 1 to ${HISTORY_MAX_LIMIT}` };
    }
    limit = +values.limit;
  }
  const q: PageQuery = { limit: Math.min(limit, PLAN_LIMITS[plan].historyCap), maxLimit: PLAN_LIMITS[plan].historyCap };
  for (const name of ['cursor', 'from', 'to'] as const) {
    const d = date(name, values[name]);
    if (isError(d)) return d;
    if (d !== undefined) q[name] = d;
  }
  if (q.from && q.to && q.from > q.to) return { code: 'bad_parameter', message: `from (${q.from}) is after to (${q.to})` };
  return q;
}

/** The bulk `symbols` list: 1 to 25 symbols of valid shape, as requested (empty entries from stray commas dropped). */
export function bulkSymbols(params: URLSearchParams): string[] | ParamError {
  const raw = once(params, 'symbols');
  if (isError(raw)) return raw;
  const list = (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (list.length === 0) return { code: 'bad_parameter', message: 'symbols is required: a comma-separated list of 1 to 25 symbols' };
  if (list.length > BULK_MAX_SYMBOLS)
    return { code: 'too_many_symbols', message: `${list.length} symbols requested; at most ${BULK_MAX_SYMBOLS} per call` };
  const bad = list.find((s) => !SYMBOL_PATTERN.test(s));
  if (bad !== undefined) return { code: 'bad_symbol', message: `"${bad.slice(0, 20)}" is not a symbol: 1 to 20 letters, digits, _ . -` };
  return list;
}

export { isError as isParamError };
