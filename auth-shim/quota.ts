/** Quotas per credential (decision 6): a per-minute window and a calendar month (UTC), behind a store interface. */
import { PLAN_LIMITS, type Plan } from '../generator/contract/plans.js';

/** Counts hits per key until `expiresAt` (ms): returns the count after this hit. */
export interface QuotaStore {
  increment(key: string, expiresAt: number): number | Promise<number>;
}

/** One process's counters; expired windows are swept as new ones arrive. */
export class MemoryQuotaStore implements QuotaStore {
  private counts = new Map<string, { n: number; expiresAt: number }>();
  private nextSweep = 0;
  increment(key: string, expiresAt: number): number {
    const now = Date.now();
    if (now >= this.nextSweep) {
      for (const [k, v] of this.counts) if (v.expiresAt <= now) this.counts.delete(k);
      this.nextSweep = now + 60_000;
    }
    const c = this.counts.get(key);
    if (c && c.expiresAt === expiresAt) return ++c.n;
    this.counts.set(key, { n: 1, expiresAt });
    return 1;
  }
}

export type QuotaOutcome =
  | { ok: true; headers: Record<string, string> }
  | { ok: false; code: 'rate_limited' | 'quota_exceeded'; retryAfter: number; headers: Record<string, string> };

export async function charge(store: QuotaStore, key: string, plan: Plan, now: number): Promise<QuotaOutcome> {
  const limits = PLAN_LIMITS[plan];
  const minuteEnd = (Math.floor(now / 60_000) + 1) * 60_000;
  const d = new Date(now);
  const monthEnd = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  const perMinute = await store.increment(`${key}:m:${minuteEnd}`, minuteEnd);
  const reset = Math.ceil((minuteEnd - now) / 1000);
  const headers = {
    'RateLimit-Limit': String(limits.perMinute),
    'RateLimit-Remaining': String(Math.max(0, limits.perMinute - perMinute)),
    'RateLimit-Reset': String(reset),
  };
  if (perMinute > limits.perMinute) return { ok: false, code: 'rate_limited', retryAfter: reset, headers };
  const perMonth = await store.increment(`${key}:M:${monthEnd}`, monthEnd);
  if (perMonth > limits.perMonth) return { ok: false, code: 'quota_exceeded', retryAfter: Math.ceil((monthEnd - now) / 1000), headers };
  return { ok: true, headers };
}
