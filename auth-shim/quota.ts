/** Quotas per credential (decision 6): a per-minute window and a calendar month (UTC), behind a store interface. */
import { PLAN_LIMITS, type Plan } from '../generator/contract/plans.js';

/** Counts one credential's hits in its current minute or month window (ending at `windowEnd`, ms): the count after this hit. */
export interface QuotaStore {
  increment(credential: string, window: 'minute' | 'month', windowEnd: number): number | Promise<number>;
}

/**
 * One process's counters: per window kind, one entry per credential, reset when a new window starts. Memory
 * stays bounded by the number of credentials that made requests, with nothing to sweep.
 */
export class MemoryQuotaStore implements QuotaStore {
  private windows = { minute: new Map<string, { end: number; n: number }>(), month: new Map<string, { end: number; n: number }>() };
  increment(credential: string, window: 'minute' | 'month', windowEnd: number): number {
    const counts = this.windows[window];
    const c = counts.get(credential);
    if (c && c.end === windowEnd) return ++c.n;
    counts.set(credential, { end: windowEnd, n: 1 });
    return 1;
  }
}

export type QuotaOutcome =
  | { ok: true; headers: Record<string, string> }
  | { ok: false; code: 'rate_limited' | 'quota_exceeded'; retryAfter: number; headers: Record<string, string> };

let monthCache = { from: 0, to: -1, end: 0 };
/** End of the calendar month (UTC) holding `now`; computed once per month. */
function monthEndOf(now: number): number {
  if (now < monthCache.from || now >= monthCache.to) {
    const d = new Date(now);
    const end = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
    monthCache = { from: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1), to: end, end };
  }
  return monthCache.end;
}

/** Charges one request; synchronous when the store is (the in-memory one), so the hot path does not wait. */
export function charge(store: QuotaStore, key: string, plan: Plan, now: number): QuotaOutcome | Promise<QuotaOutcome> {
  const minuteEnd = (Math.floor(now / 60_000) + 1) * 60_000;
  const perMinute = store.increment(key, 'minute', minuteEnd);
  return typeof perMinute === 'number' ? afterMinute(store, key, plan, now, minuteEnd, perMinute) : perMinute.then((n) => afterMinute(store, key, plan, now, minuteEnd, n));
}

function afterMinute(store: QuotaStore, key: string, plan: Plan, now: number, minuteEnd: number, perMinute: number): QuotaOutcome | Promise<QuotaOutcome> {
  const limits = PLAN_LIMITS[plan];
  const reset = Math.ceil((minuteEnd - now) / 1000);
  const headers = {
    'RateLimit-Limit': String(limits.perMinute),
    'RateLimit-Remaining': String(Math.max(0, limits.perMinute - perMinute)),
    'RateLimit-Reset': String(reset),
  };
  if (perMinute > limits.perMinute) return { ok: false, code: 'rate_limited', retryAfter: reset, headers };
  const monthEnd = monthEndOf(now);
  const judge = (perMonth: number): QuotaOutcome =>
    perMonth > limits.perMonth ? { ok: false, code: 'quota_exceeded', retryAfter: Math.ceil((monthEnd - now) / 1000), headers } : { ok: true, headers };
  const perMonth = store.increment(key, 'month', monthEnd);
  return typeof perMonth === 'number' ? judge(perMonth) : perMonth.then(judge);
}
