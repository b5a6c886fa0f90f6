/**
 * Step: quota. Charges the request to the caller's per-minute window and calendar month (decision 6) and gives
 * the RateLimit headers every response to it carries; an exceeded quota is refused with 429 and Retry-After.
 * A caller the marketplace counts for (no quota key) is not charged here.
 *
 * Only answers that carry data count toward the month (decisions 35 and 100): once a request's answer is known, a
 * 304 or an error returns the month's charge, and a data answer to a revalidation past a spent month is refused
 * (`answered`).
 */
import { PLAN_LIMITS } from '../../generator/contract/index.js';
import type { Caller } from '../credentials.js';
import type { ShimRequest, ShimResponse } from '../exchange.js';
import { monthOf, type Admission, type Limits, type MonthUse, type MonthWindow, type QuotaStore } from '../quota.js';
import { Refusal } from '../refusal.js';

/** A request admitted and counted, with the headers that say where its caller stands; null when the marketplace counts. */
export type Charged = { headers: Record<string, string>; admission: Admission; month: MonthWindow } | null;

const seconds = (ms: number) => String(Math.max(0, Math.ceil(ms / 1000)));

/**
 * Where a caller stands, in every form a client reads: the minute's headers (decision 6), the month's as RapidAPI
 * shows its own quotas (decision 32), and both windows in the IETF fields of the rate-limit draft 11, as RFC 8941
 * lists (decision 40). `monthRemaining` is the month as it stands once the answer is known (a refund raises it).
 */
function quotaHeaders(limits: Limits, a: Admission, month: MonthWindow, now: number, monthRemaining = a.monthRemaining) {
  const { perMinute, perMonth } = limits;
  const minuteReset = seconds(a.resetMs);
  const monthReset = seconds(month.end - now);
  return {
    'RateLimit-Limit': String(perMinute),
    'RateLimit-Remaining': String(a.remaining),
    'RateLimit-Reset': minuteReset,
    'X-RateLimit-Requests-Limit': String(perMonth),
    'X-RateLimit-Requests-Remaining': String(monthRemaining),
    'X-RateLimit-Requests-Reset': monthReset,
    'RateLimit-Policy': `"minute";q=${perMinute};w=60, "month";q=${perMonth};w=${Math.round((month.end - month.start) / 1000)}`,
    RateLimit: `"minute";r=${a.remaining};t=${minuteReset}, "month";r=${monthRemaining};t=${monthReset}`,
  };
}

/**
 * How a request to a data route uses the month: a HEAD carries no data and counts toward the minute alone, as a
 * 304 does (decision 104); a conditional one may be answered 304.
 */
export const monthUse = (request: ShimRequest): MonthUse =>
  request.method === 'HEAD' ? 'minute' : request.headers.has('if-none-match') ? 'revalidation' : 'request';

/**
 * Charges one request against the caller's limits in effect (its plan's, or its key's own: decision 106);
 * synchronous when the store is (the in-memory ones), so the hot path does not wait.
 */
export function charged(quotas: QuotaStore, caller: Caller, now: number, use: MonthUse = 'request'): Charged | Promise<Charged> {
  if (!caller.quotaKey) return null;
  const month = monthOf(now);
  const a = quotas.take(caller.quotaKey, caller.limits, now, month, use);
  return a instanceof Promise ? a.then((x) => admitted(caller, x, month, now)) : admitted(caller, a, month, now);
}

function admitted(caller: Caller, a: Admission, month: MonthWindow, now: number): Charged {
  const headers = quotaHeaders(caller.limits, a, month, now);
  if (a.ok) return { headers, admission: a, month };
  throw refusal(caller, a.code!, a.retryMs, headers);
}

/** A refused request, told when to retry: in `retryMs`, rounded up to whole seconds, never 0. */
function refusal(caller: Caller, code: 'rate_limited' | 'quota_exceeded', retryMs: number, headers: Record<string, string>): Refusal {
  const retryAfter = Math.max(1, Math.ceil(retryMs / 1000));
  const limits = caller.limits;
  // A key with its own terms (decision 106) is told its key's limit, not the plan's.
  const whose = (own: boolean) => (own ? "this key's" : `the ${caller.plan} plan's`);
  const plan = PLAN_LIMITS[caller.plan];
  const what =
    code === 'rate_limited'
      ? `${whose(limits.perMinute !== plan.perMinute)} ${limits.perMinute} requests per minute`
      : `${whose(limits.perMonth !== plan.perMonth)} ${limits.perMonth} requests this month (UTC)`;
  return new Refusal(code, `Quota exceeded: ${what}; retry in ${retryAfter} s`, { 'Retry-After': String(retryAfter), ...headers });
}

/** Data asked for past a spent month (a HEAD's, or a revalidation's the month no longer charged): until it ends. */
const monthSpent = (caller: Caller, c: NonNullable<Charged>, now: number) =>
  refusal(caller, 'quota_exceeded', c.month.end - now, c.headers);

/**
 * The answer to a HEAD, once known: it spends no month (decision 104), but answers as the GET would, so past a spent
 * month an answer with data is `quota_exceeded`, as the GET's is; a 304 or an error goes out as it is.
 */
export function headAnswered(caller: Caller, c: Charged, res: ShimResponse, now: number): ShimResponse {
  if (!c || res.status < 200 || res.status >= 300 || c.admission.monthUsed < caller.limits.perMonth) return res;
  throw monthSpent(caller, c, now);
}

/**
 * The answer to a data request, once known: only an answer that carries data (a 2xx) keeps its month's charge
 * (decisions 35 and 100). Any other (a 304, a 400, 403 or 404, a 5xx) gives the charge back, and its month headers
 * show the month as it then stands; it still counted toward the minute. Past a spent month a revalidation was
 * admitted by the minute alone: a 304 or an error goes out as it is, and data is refused `quota_exceeded`, as the
 * same request without If-None-Match would have been.
 */
export function answered(
  quotas: QuotaStore,
  caller: Caller,
  c: Charged,
  res: ShimResponse,
  now: number,
): ShimResponse | Promise<ShimResponse> {
  if (!c) return res;
  const a = c.admission;
  if (res.status >= 200 && res.status < 300) {
    if (a.monthCharged) return res;
    throw monthSpent(caller, c, now);
  }
  if (!a.monthCharged) return res;
  Object.assign(res.headers, quotaHeaders(caller.limits, a, c.month, now, Math.max(0, caller.limits.perMonth - (a.monthUsed - 1))));
  const returned = quotas.refund(caller.quotaKey!, c.month, a);
  return returned instanceof Promise ? returned.then(() => res) : res;
}
