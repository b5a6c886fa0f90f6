/**
 * Quotas per credential (decisions 6 and 21): at most the plan's per-minute limit in any rolling 60 seconds (a
 * sliding window, so no double burst across a minute boundary) and the per-month limit in the calendar month
 * (UTC). A refused request counts toward neither window. Stores decide where the counts live; the rule is here.
 */
import { PLAN_LIMITS, type Plan } from '../generator/contract/plans.js';

export const MINUTE_MS = 60_000;

export interface Limits {
  perMinute: number;
  perMonth: number;
}

/** One charge's verdict. Times are milliseconds from `now`. */
export interface Admission {
  ok: boolean;
  code?: 'rate_limited' | 'quota_exceeded';
  /** Requests the rolling minute still admits after this one. */
  remaining: number;
  /** Until the oldest request counted in the rolling minute leaves it. */
  resetMs: number;
  /** Until a refused request would be admitted. */
  retryMs: number;
  /** Requests the calendar month still admits after this one. */
  monthRemaining: number;
}

/** Where counts live. `take` admits one request and counts it, atomically, or refuses it and counts nothing. */
export interface QuotaStore {
  take(credential: string, limits: Limits, now: number, month: MonthWindow): Admission | Promise<Admission>;
  /** Counts requests that were admitted elsewhere meanwhile (while this shared store could not be reached), refusing none. */
  record?(charges: Charge[]): Promise<void>;
  close?(): Promise<void>;
}

/** One admitted request, as the fallback keeps it until the shared store is back. */
export interface Charge {
  credential: string;
  now: number;
  month: MonthWindow;
}

export interface MonthWindow {
  start: number;
  end: number;
}

let monthCache: MonthWindow = { start: 0, end: -1 };
/** The calendar month (UTC) holding `now`; computed once per month. */
export function monthOf(now: number): MonthWindow {
  if (now < monthCache.start || now >= monthCache.end) {
    const d = new Date(now);
    monthCache = { start: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1), end: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) };
  }
  return monthCache;
}

/** One credential's state: admitted times in the rolling minute (oldest first) and its month's count. */
export interface Counts {
  minute: number[];
  monthStart: number;
  month: number;
}

/** The rule, applied to one credential's counts in place (the in-process stores and the Durable Object share it). */
export function admit(c: Counts, limits: Limits, now: number, month: MonthWindow): Admission {
  const recent = c.minute;
  let drop = 0;
  while (drop < recent.length && recent[drop]! <= now - MINUTE_MS) drop++;
  if (drop) recent.splice(0, drop);
  if (c.monthStart !== month.start) [c.monthStart, c.month] = [month.start, 0];
  if (recent.length >= limits.perMinute) {
    const wait = recent[0]! + MINUTE_MS - now;
    return {
      ok: false,
      code: 'rate_limited',
      remaining: 0,
      resetMs: wait,
      retryMs: wait,
      monthRemaining: Math.max(0, limits.perMonth - c.month),
    };
  }
  if (c.month >= limits.perMonth) {
    return {
      ok: false,
      code: 'quota_exceeded',
      remaining: limits.perMinute - recent.length,
      resetMs: recent.length ? recent[0]! + MINUTE_MS - now : 0,
      retryMs: month.end - now,
      monthRemaining: 0,
    };
  }
  recent.push(now);
  c.month++;
  return {
    ok: true,
    remaining: limits.perMinute - recent.length,
    resetMs: recent[0]! + MINUTE_MS - now,
    retryMs: 0,
    monthRemaining: limits.perMonth - c.month,
  };
}

/**
 * A request admitted elsewhere (by a fallback while this store could not be reached), counted in place: in its
 * minute, in order, and in its month, refusing nothing.
 */
export function recordAdmitted(c: Counts, now: number, month: MonthWindow): void {
  if (c.monthStart < month.start) [c.monthStart, c.month] = [month.start, 0];
  if (c.monthStart === month.start) c.month++;
  let at = c.minute.length;
  while (at > 0 && c.minute[at - 1]! > now) at--;
  c.minute.splice(at, 0, now);
}

/**
 * One process's counts, for tests, benchmarks and the edge isolate's fallback. Memory is bounded by the
 * credentials that made requests (at most a plan's per-minute limit of times each).
 */
export class MemoryQuotaStore implements QuotaStore {
  protected counts = new Map<string, Counts>();
  take(credential: string, limits: Limits, now: number, month: MonthWindow): Admission {
    let c = this.counts.get(credential);
    if (!c) this.counts.set(credential, (c = { minute: [], monthStart: month.start, month: 0 }));
    return admit(c, limits, now, month);
  }
}

/**
 * A shared store that cannot be reached must not take the API down (decision 21): answer from an in-process
 * store meanwhile, and say so in the log at most once a minute.
 */
/** The most admissions the fallback keeps for the shared store (about 100 bytes each); past it the oldest are dropped. */
const MAX_OWED = 200_000;

/**
 * A shared store (Redis) with an in-process fallback: when the shared store cannot be reached, requests are
 * counted here (logged at most once a minute, never a 5xx), and each one admitted meanwhile is kept and charged
 * to the shared store as soon as it answers again, so its counts miss nothing that was served.
 */
export class FallbackQuotaStore implements QuotaStore {
  private lastLog = -Infinity;
  private local = new MemoryQuotaStore();
  private owed: Charge[] = [];
  private settling: Promise<void> | null = null;
  constructor(
    private shared: QuotaStore,
    private log: (m: string) => void,
  ) {}

  async take(credential: string, limits: Limits, now: number, month: MonthWindow): Promise<Admission> {
    let admission: Admission;
    try {
      admission = await this.shared.take(credential, limits, now, month);
    } catch (e) {
      if (Date.now() - this.lastLog >= MINUTE_MS) {
        this.lastLog = Date.now();
        this.log(`quotas: the shared store cannot be reached (${(e as Error).message}); counting in this process until it is back`);
      }
      const a = this.local.take(credential, limits, now, month);
      if (a.ok && this.shared.record) {
        if (this.owed.length >= MAX_OWED) this.owed.shift();
        this.owed.push({ credential, now, month });
      }
      return a;
    }
    if (this.owed.length && !this.settling) this.settling = this.settle().finally(() => (this.settling = null));
    return admission;
  }

  /** Charges what was admitted during the outage to the shared store; kept for the next try if it fails again. */
  private async settle(): Promise<void> {
    const batch = this.owed;
    this.owed = [];
    try {
      await this.shared.record!(batch);
      this.local = new MemoryQuotaStore();
      this.log(`quotas: the shared store is back; ${batch.length} request(s) counted in this process meanwhile are charged to it`);
    } catch {
      this.owed = [...batch, ...this.owed].slice(-MAX_OWED);
    }
  }

  /** Waits for a charge in progress (tests, and close). */
  async settled(): Promise<void> {
    await this.settling;
  }

  async close(): Promise<void> {
    await this.settling;
    await this.shared.close?.();
  }
}

export type QuotaOutcome =
  | { ok: true; headers: Record<string, string> }
  | { ok: false; code: 'rate_limited' | 'quota_exceeded'; retryAfter: number; headers: Record<string, string> };

const seconds = (ms: number) => String(Math.max(0, Math.ceil(ms / 1000)));

/** The minute's headers (decision 6) and the month's, as RapidAPI shows its own quotas (decision 32). */
function outcome(plan: Plan, a: Admission, monthResetMs: number): QuotaOutcome {
  const headers = {
    'RateLimit-Limit': String(PLAN_LIMITS[plan].perMinute),
    'RateLimit-Remaining': String(a.remaining),
    'RateLimit-Reset': seconds(a.resetMs),
    'X-RateLimit-Requests-Limit': String(PLAN_LIMITS[plan].perMonth),
    'X-RateLimit-Requests-Remaining': String(a.monthRemaining),
    'X-RateLimit-Requests-Reset': seconds(monthResetMs),
  };
  return a.ok ? { ok: true, headers } : { ok: false, code: a.code!, retryAfter: Math.max(1, Math.ceil(a.retryMs / 1000)), headers };
}

/** Charges one request; synchronous when the store is (the in-memory ones), so the hot path does not wait. */
export function charge(store: QuotaStore, key: string, plan: Plan, now: number): QuotaOutcome | Promise<QuotaOutcome> {
  const month = monthOf(now);
  const a = store.take(key, PLAN_LIMITS[plan], now, month);
  return a instanceof Promise ? a.then((x) => outcome(plan, x, month.end - now)) : outcome(plan, a, month.end - now);
}
