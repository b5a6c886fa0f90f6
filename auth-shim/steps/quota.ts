/**
 * Step: quota. Charges the request to the caller's per-minute window and calendar month (decision 6) and gives
 * the RateLimit headers every response to it carries; an exceeded quota is refused with 429 and Retry-After.
 * A caller the marketplace counts for (no quota key) is not charged here.
 */
import { PLAN_LIMITS } from '../../generator/contract/index.js';
import type { Caller } from '../credentials.js';
import { charge, type QuotaOutcome, type QuotaStore } from '../quota.js';
import { Refusal } from '../refusal.js';

export type RateHeaders = Record<string, string>;
const NONE: RateHeaders = {};

/** Synchronous when the store is (the in-memory ones), so the hot path does not wait. */
export function charged(quotas: QuotaStore, caller: Caller, now: number): RateHeaders | Promise<RateHeaders> {
  if (!caller.quotaKey) return NONE;
  const pending = charge(quotas, caller.quotaKey, caller.plan, now);
  return pending instanceof Promise ? pending.then((q) => admitted(caller, q)) : admitted(caller, pending);
}

function admitted(caller: Caller, q: QuotaOutcome): RateHeaders {
  if (q.ok) return q.headers;
  const limits = PLAN_LIMITS[caller.plan];
  const what =
    q.code === 'rate_limited'
      ? `the ${caller.plan} plan's ${limits.perMinute} requests per minute`
      : `the ${caller.plan} plan's ${limits.perMonth} requests this month (UTC)`;
  throw new Refusal(
    q.code,
    `Quota exceeded: ${what}; retry in ${q.retryAfter} s`,
    Object.assign({ 'Retry-After': String(q.retryAfter) }, q.headers),
  );
}
