/**
 * Quotas per credential (decisions 6, 21, 35, 36 and 38): at most the plan's per-minute limit in any rolling 60
 * seconds (a sliding window: no double burst across a minute boundary) and the per-month limit in the calendar month
 * (UTC). A refused request counts toward no window that refused it. Monthly totals are kept for the current month and
 * the MONTHS_KEPT before it, so a month can be invoiced once it has ended. Stores decide where counts live; the rule
 * is here.
 */
import { TroubleLog } from './trouble-log.js';

export const MINUTE_MS = 60_000;
/** Months of totals kept before the current one: last month to invoice, and a year before it to compare. */
export const MONTHS_KEPT = 13;

export interface Limits {
  perMinute: number;
  perMonth: number;
}

/**
 * How a request uses the month (decisions 35, 36, 100):
 * - `request`: counted in the minute and the month, refused when either is spent;
 * - `minute`: counted in the minute only, whatever the month says (`GET /v1/usage`);
 * - `revalidation`: a conditional request. While the month has room it is charged like any request, and the charge
 *   is returned (`refund`) if the answer is a 304: the month may be briefly one too high, never too low. Once the
 *   month is spent the minute alone admits it, and it is answered 304, or refused if the answer would carry data.
 */
export type MonthUse = 'request' | 'minute' | 'revalidation';

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
  /** Requests counted in the rolling minute, this one included when it was admitted. */
  minuteUsed: number;
  /** Requests counted in the month, this one included when it was charged to it. */
  monthUsed: number;
  /** Whether this request was charged to the month (a 304 returns the charge). */
  monthCharged: boolean;
}

/** Where counts live. `take` admits one request and counts it, atomically, or refuses it and counts nothing. */
export interface QuotaStore {
  take(credential: string, limits: Limits, now: number, month: MonthWindow, use?: MonthUse): Admission | Promise<Admission>;
  /** Returns the month's charge of an admitted request whose answer carried no data (a 304 or a refusal, decision 100). */
  refund(credential: string, month: MonthWindow, admission: Admission): void | Promise<void>;
  /** Counts what was admitted elsewhere while this shared store could not be reached, refusing none. */
  record?(charges: Charge[]): Promise<void | number>;
  close?(): Promise<void>;
}

/** What an instance counted while the shared store could not be reached: a request, a minute-only one, or a refund. */
export interface Charge {
  credential: string;
  now: number;
  month: MonthWindow;
  kind: 'request' | 'minute' | 'refund';
  /** The number a store that numbers its commands (Redis) sent it under: the `seq` of a failed take or refund's error. */
  seq?: number;
  /** The client that numbered it, where that was another process (one whose stop could not record it). */
  client?: string;
}

/** `n charges`, or `1 charge`, as a message says it. */
export const chargeCount = (n: number): string => `${n} charge${n === 1 ? '' : 's'}`;

/** A stop that could not record every charge it owed: they are kept where the message says (serve's exit 3). */
export class UnrecordedCharges extends Error {}

export interface MonthWindow {
  start: number;
  end: number;
}

/** The calendar month (UTC) holding `now`. */
export function monthOf(now: number): MonthWindow {
  const d = new Date(now);
  return { start: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1), end: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) };
}

/** The first instant of the month `n` months after the month starting at `start` (UTC; `n` may be negative). */
export function monthsAfter(start: number, n: number): number {
  const d = new Date(start);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + n, 1);
}

/** `YYYY-MM` of the month starting at `start` (UTC). */
export const monthName = (start: number): string => new Date(start).toISOString().slice(0, 7);

/** One credential's state: admitted times in the rolling minute (oldest first), this month's count, earlier totals. */
export interface Counts {
  minute: number[];
  monthStart: number;
  month: number;
  /** `[month start, requests]` of earlier months, oldest first: at least the MONTHS_KEPT before `monthStart`. */
  past: [number, number][];
}

export const newCounts = (month: MonthWindow): Counts => ({ minute: [], monthStart: month.start, month: 0, past: [] });

/** Drops the leading entries of a sorted list for which `old` holds. */
function dropWhile<T>(list: T[], old: (t: T) => boolean): void {
  let n = 0;
  while (n < list.length && old(list[n]!)) n++;
  if (n) list.splice(0, n);
}

/** Moves the current month on to the one starting at `start` when that is later, keeping the earlier total. */
function turn(c: Counts, start: number): void {
  if (start <= c.monthStart) return;
  if (c.month > 0) c.past.push([c.monthStart, c.month]);
  [c.monthStart, c.month] = [start, 0];
  const oldest = monthsAfter(start, -MONTHS_KEPT);
  dropWhile(c.past, ([s]) => s < oldest);
}

/** The requests counted in the month starting at `start`. */
export function monthTotal(c: Counts, start: number): number {
  return start === c.monthStart ? c.month : (c.past.find(([s]) => s === start)?.[1] ?? 0);
}

/** Every credential's requests in the month starting at `start`, as billing reads them (decision 38); none left out. */
export function totalsOf(counts: Map<string, Counts>, start: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const [credential, c] of counts) {
    const n = monthTotal(c, start);
    if (n > 0) out.set(credential, n);
  }
  return out;
}

/** Sets the total of a month: the current one, a later one (it turned), or an earlier one (a charge arriving late). */
function setMonth(c: Counts, start: number, total: number): void {
  turn(c, start);
  if (start === c.monthStart) return void (c.month = total);
  const i = c.past.findIndex(([s]) => s >= start);
  if (c.past[i]?.[0] === start) c.past[i]![1] = total;
  else if (start >= monthsAfter(c.monthStart, -MONTHS_KEPT)) c.past.splice(i < 0 ? c.past.length : i, 0, [start, total]);
}

const addToMonth = (c: Counts, start: number, n: number) => setMonth(c, start, Math.max(0, monthTotal(c, start) + n));

/** Drops the times that have left the rolling minute at `now`. */
const dropOld = (minute: number[], now: number) => dropWhile(minute, (t) => t <= now - MINUTE_MS);

/** Puts `now` into the rolling minute in time order (isolates' clocks may differ a little). */
function insertTime(minute: number[], now: number): void {
  let at = minute.length;
  while (at > 0 && minute[at - 1]! > now) at--;
  minute.splice(at, 0, now);
}

/** The rule, applied to one credential's counts in place (the in-process stores and the Durable Object share it). */
export function admit(c: Counts, limits: Limits, now: number, month: MonthWindow, use: MonthUse = 'request'): Admission {
  const recent = c.minute;
  dropOld(recent, now);
  turn(c, month.start);
  const used = monthTotal(c, month.start);
  const spent = used >= limits.perMonth;
  // A spent month answers first (decision 100): a caller told to wait out the minute would then meet the month.
  const code = spent && use === 'request' ? 'quota_exceeded' : recent.length >= limits.perMinute ? 'rate_limited' : undefined;
  const charged = !code && (use === 'request' || (use === 'revalidation' && !spent));
  if (!code) insertTime(recent, now);
  if (charged) addToMonth(c, month.start, 1);
  const monthUsed = charged ? used + 1 : used;
  const resetMs = recent.length ? recent[0]! + MINUTE_MS - now : 0;
  return {
    ok: !code,
    code,
    remaining: Math.max(0, limits.perMinute - recent.length),
    resetMs,
    retryMs: code === 'quota_exceeded' ? month.end - now : code ? resetMs : 0,
    monthRemaining: Math.max(0, limits.perMonth - monthUsed),
    minuteUsed: recent.length,
    monthUsed,
    monthCharged: charged,
  };
}

/** A month's charge returned (a 304): the month is never taken below zero. */
const refundMonth = (c: Counts, month: MonthWindow): void => addToMonth(c, month.start, -1);

/**
 * A charge counted elsewhere (by a fallback, or in a log), counted in place: into its minute in time order and into
 * its month, refusing nothing.
 */
export function recordCharge(c: Counts, charge: Pick<Charge, 'now' | 'month' | 'kind'>): void {
  if (charge.kind === 'refund') return refundMonth(c, charge.month);
  dropOld(c.minute, charge.now);
  insertTime(c.minute, charge.now);
  if (charge.kind === 'request') addToMonth(c, charge.month.start, 1);
}

/**
 * One process's counts, for tests, benchmarks and the fallback of a shared store. Memory is bounded by the
 * credentials that made requests (a per-minute limit of times each, and fourteen months' totals).
 */
export class MemoryQuotaStore implements QuotaStore {
  protected counts = new Map<string, Counts>();

  protected countsOf(credential: string, month: MonthWindow): Counts {
    let c = this.counts.get(credential);
    if (!c) this.counts.set(credential, (c = newCounts(month)));
    return c;
  }

  take(credential: string, limits: Limits, now: number, month: MonthWindow, use: MonthUse = 'request'): Admission {
    return admit(this.countsOf(credential, month), limits, now, month, use);
  }

  refund(credential: string, month: MonthWindow): void {
    const c = this.counts.get(credential);
    if (c) refundMonth(c, month);
  }

  /**
   * What a shared store answered, taken in, so that this process's counts go on from there if it goes away. The times
   * that left the minute go, as in `admit`: a process that mirrors every request would otherwise keep each one.
   */
  mirror(credential: string, a: Admission, now: number, month: MonthWindow): void {
    const c = this.countsOf(credential, month);
    dropOld(c.minute, now);
    if (a.ok) insertTime(c.minute, now);
    setMonth(c, month.start, a.monthUsed);
  }

  totals(start: number): Map<string, number> {
    return totalsOf(this.counts, start);
  }
}

/** The most charges the fallback keeps for the shared store (about 100 bytes each); past it new ones are dropped, and logged. */
const MAX_OWED = 200_000;
/** How often the fallback tries the shared store again while it owes it charges. */
const RETRY_MS = 1_000;
/** Charges sent to the shared store in one call. */
const BATCH = 500;
/** How long a stop tries to record what it owes before it hands the rest to `keep`. */
const CLOSE_MS = 5_000;

export interface FallbackOptions {
  retryMs?: number;
  /** Charges a stop before could not record (they keep their numbers): owed from the start. */
  owed?: Charge[];
  /**
   * Keeps the charges owed since the last keep (`fresh`) where the next start takes them in: each second while any is
   * owed, so a crash loses at most the last second's, and at a stop. `owed` is all that is owed now, which it may
   * write instead: what it kept before may hold charges recorded since (one recorded twice counts once). Returns where
   * (the stop's message names it).
   */
  keep?: (fresh: Charge[], owed: Charge[]) => string;
  /** Everything owed is recorded: what `keep` kept before may go. */
  recorded?: () => void;
  /**
   * Charges other instances kept and left since (they ended: a rolling restart during an outage), asked for every
   * ADOPT_TRIES retries: owed from then on, as `owed` is from the start.
   */
  adopt?: () => Charge[];
}
/** How many retry periods between two asks for charges other instances left (10 s by default). */
const ADOPT_TRIES = 10;

const seqOf = (e: unknown): number | undefined => (e as { seq?: number } | null)?.seq;

/**
 * A shared store (Redis, the Durable Objects) with an in-process fallback, so that a shared store that cannot be
 * reached never takes the API down (decision 21): requests are counted here meanwhile (logged at most once a minute,
 * never a 5xx), and each charge made meanwhile is recorded in the shared store once it answers.
 *
 * No rolling minute admits more than the limit across the outage, in this process: the counts here mirror what the
 * shared store answered, and while any charge is owed every request is counted here, so none reaches the shared
 * store before every charge of this process has.
 */
export class FallbackQuotaStore implements QuotaStore {
  private readonly local = new MemoryQuotaStore();
  private owed: Charge[] = [];
  private dropped = 0;
  private settling: Promise<void> | null = null;
  private lastTry = -Infinity;
  private readonly retryMs: number;
  /** While charges are owed (where they can be kept): each second they are kept and tried, idle or not. */
  private retrying: ReturnType<typeof setInterval> | undefined;
  /** The charges owed since the last keep, where they can be kept. */
  private unkept: Charge[] = [];
  private closing = false;
  private readonly troubles: TroubleLog<'unreachable' | 'keep'>;
  /** The charges other instances owed (`adopt`): not counted in this process. */
  private readonly inherited = new WeakSet<Charge>();
  private readonly adopting: ReturnType<typeof setInterval> | undefined;

  constructor(
    private shared: QuotaStore,
    private log: (m: string) => void,
    private readonly options: FallbackOptions = {},
  ) {
    this.retryMs = options.retryMs ?? RETRY_MS;
    this.troubles = new TroubleLog(log);
    this.adopt(options.owed ?? []);
    if (options.adopt) {
      this.adopting = setInterval(() => this.adopt(options.adopt!()), this.retryMs * ADOPT_TRIES);
      this.adopting.unref?.();
    }
  }

  /** Charges another instance counted (a stop before this start, or one that ended since): owed from now on. */
  private adopt(charges: Charge[]): void {
    if (!charges.length || this.closing) return;
    for (const c of charges) this.inherited.add(c);
    this.owed.push(...charges);
    if (this.options.keep) this.unkept.push(...charges);
    this.owing();
  }

  private owing(): void {
    if (this.closing) return;
    this.retrying ??= setInterval(() => {
      if (!this.owed.length) {
        clearInterval(this.retrying);
        this.retrying = undefined;
        return;
      }
      this.keepOwed();
      this.trySettling();
    }, this.retryMs);
    this.retrying.unref?.();
  }

  private keepOwed(): void {
    if (!this.unkept.length || !this.options.keep) return;
    try {
      this.options.keep(this.unkept, this.owed);
      this.unkept = [];
      if (this.troubles.over('keep')) this.log('quotas: the charges owed to the shared store are kept on disk again');
    } catch (e) {
      this.troubles.say(
        'keep',
        `quotas: the charges owed to the shared store cannot be kept on disk (${(e as Error).message}); a crash would lose them`,
      );
    }
  }

  take(credential: string, limits: Limits, now: number, month: MonthWindow, use: MonthUse = 'request'): Admission | Promise<Admission> {
    if (this.owed.length) {
      this.trySettling();
      return this.takeHere(credential, limits, now, month, use);
    }
    const here = (e: unknown) => {
      this.unreachable(e);
      this.lastTry = Date.now();
      return this.takeHere(credential, limits, now, month, use, seqOf(e));
    };
    let shared: Admission | Promise<Admission>;
    try {
      shared = this.shared.take(credential, limits, now, month, use);
    } catch (e) {
      return here(e);
    }
    // Chained, not awaited: a charge waits on the shared store once, not on an async function's own promise too.
    return Promise.resolve(shared).then((a) => {
      this.local.mirror(credential, a, now, month);
      return a;
    }, here);
  }

  private takeHere(credential: string, limits: Limits, now: number, month: MonthWindow, use: MonthUse, seq?: number): Admission {
    const a = this.local.take(credential, limits, now, month, use);
    if (a.ok && this.shared.record) this.owe({ credential, now, month, kind: a.monthCharged ? 'request' : 'minute', seq });
    return a;
  }

  /** While charges are owed a refund is owed after them, in order; a charge made here is returned by it too. */
  refund(credential: string, month: MonthWindow, admission: Admission): void | Promise<void> {
    this.local.refund(credential, month);
    if (this.owed.length) return void this.owe({ credential, now: 0, month, kind: 'refund' });
    return Promise.resolve(this.shared.refund(credential, month, admission)).catch((e: unknown) => {
      this.unreachable(e);
      this.owe({ credential, now: 0, month, kind: 'refund', seq: seqOf(e) });
    });
  }

  private owe(charge: Charge): void {
    // Only where there is somewhere to keep them (Node): an edge isolate runs no timer of its own between requests.
    if (this.options.keep) this.owing();
    if (this.owed.length < MAX_OWED) {
      if (this.options.keep) this.unkept.push(charge);
      return void this.owed.push(charge);
    }
    // Dropping the newest keeps the order of what is sent; the shared store then misses these, so say how many.
    if (this.dropped++ === 0)
      this.log(`quotas: more than ${MAX_OWED} charges owed to the shared store; dropping new ones until it is back`);
  }

  private unreachable(e: unknown): void {
    const why = (e as Error)?.message ?? e;
    this.troubles.say('unreachable', `quotas: the shared store cannot be reached (${why}); counting in this process until it is back`);
  }

  private trySettling(): void {
    if (this.settling || Date.now() - this.lastTry < this.retryMs) return;
    this.lastTry = Date.now();
    this.settling = this.settle().finally(() => (this.settling = null));
  }

  /**
   * Records what is owed in the shared store, oldest first; what it cannot take stays owed for the next try. Those
   * numbered by the shared store go first, in its order (Charge.seq): it skips a number at or below one it applied.
   */
  private async settle(): Promise<void> {
    this.owed.sort((a, b) => (a.seq ?? Number.MAX_SAFE_INTEGER) - (b.seq ?? Number.MAX_SAFE_INTEGER));
    let [sent, applied, earlier] = [0, 0, 0];
    try {
      while (this.owed.length) {
        const batch = this.owed.slice(0, BATCH);
        const n = await this.shared.record!(batch);
        this.owed.splice(0, batch.length);
        sent += batch.length;
        earlier += batch.filter((c) => this.inherited.has(c)).length;
        applied += typeof n === 'number' ? n : batch.length; // a store that says how many it had not applied already
      }
    } catch (e) {
      return this.unreachable(e);
    }
    const skipped =
      sent > applied
        ? `; ${sent - applied} of them it had already (sent before and run late, or recorded before): skipped, not counted twice`
        : '';
    const lost = this.dropped ? `; ${this.dropped} more could not be kept` : '';
    this.dropped = 0;
    this.unkept = [];
    this.options.recorded?.();
    // Over: the next outage is said when it starts, as this one's end is.
    this.troubles.over('unreachable');
    const what = [
      sent > earlier ? `${sent - earlier} charge(s) counted in this process meanwhile` : '',
      earlier ? `${earlier} charge(s) an instance before this one could not record` : '',
    ];
    this.log(`quotas: the shared store is back; ${what.filter(Boolean).join(' and ')} are recorded in it${skipped}${lost}`);
  }

  /** Waits for a recording in progress (tests, and close). */
  async settled(): Promise<void> {
    await this.settling;
  }

  /** Records what is owed, trying for CLOSE_MS; the rest goes to `keep` and the stop says where (UnrecordedCharges). */
  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.retrying);
    clearInterval(this.adopting);
    for (const until = Date.now() + CLOSE_MS; ; await new Promise((r) => setTimeout(r, 250))) {
      await this.settling;
      if (!this.owed.length || Date.now() >= until) break;
      this.lastTry = -Infinity;
      this.trySettling();
      await this.settling;
    }
    const kept = this.owed.length && this.options.keep ? this.options.keep(this.unkept, this.owed) : null;
    await this.shared.close?.();
    if (kept)
      throw new UnrecordedCharges(
        `${chargeCount(this.owed.length)} counted while the shared store could not be reached could not be recorded in ${CLOSE_MS / 1000} s; they are kept in ${kept}, which the next start of serve records`,
      );
  }
}
