/**
 * The edge's quota store (decision 21): one Durable Object per credential (`idFromName`), so every isolate of the
 * deployment shares one count, and the object's one-request-at-a-time execution makes each charge atomic. The
 * object keeps the same counts and applies the same rule (`admit`) as the in-process stores, monthly totals
 * included (decision 38: the current month and the thirteen before it); a 304's month charge is returned to it
 * (`refund`), and what an isolate counted while the objects could not be reached is recorded in them when they
 * answer again (`record`). Billing reads the totals from one more object, the directory (`QuotaDirectory`, decision
 * 98): each counter reports its monthly totals to it at most a minute after they change (through the object's
 * alarm, off the request's path), so the operator's route reads every credential's month in one request.
 */
import {
  admit,
  monthName,
  monthsAfter,
  MONTHS_KEPT,
  newCounts,
  recordCharge,
  type Admission,
  type Charge,
  type Counts,
  type Limits,
  type MonthUse,
  type MonthWindow,
  type QuotaStore,
} from './quota.js';

/** The parts of the Workers runtime's Durable Object API used here (no dependency on its type package). */
interface DurableObjectStorageLike {
  get<T>(key: string): Promise<T | undefined>;
  put<T>(key: string, value: T): Promise<void>;
  /** The object's alarm (the runtime calls `alarm()` at that time); used only where a directory is bound. */
  getAlarm?(): Promise<number | null>;
  setAlarm?(at: number): Promise<void>;
}
export interface DurableObjectStateLike {
  storage: DurableObjectStorageLike;
}
interface DurableObjectStubLike {
  fetch(url: string, init: RequestInit): Promise<Response>;
}
export interface DurableObjectNamespaceLike {
  idFromName(name: string): unknown;
  get(id: unknown): DurableObjectStubLike;
}
/** The bindings a counter reads: the directory it reports its totals to (`QUOTA_DIRECTORY`), when there is one. */
interface CounterEnv {
  QUOTA_DIRECTORY?: DurableObjectNamespaceLike;
}

/** Each request names the credential the object counts for, which its alarm reports under (an isolate of an earlier release omits it). */
type Named<T> = T & { credential?: string };
type TakeRequest = Named<{ limits: Limits; now: number; month: MonthWindow; use?: MonthUse }>;
type RefundRequest = Named<{ month: MonthWindow }>;
type RecordRequest = Named<{ charges: Pick<Charge, 'now' | 'month' | 'kind'>[] }>;

/** What a counter sends the directory: every monthly total it keeps, by `YYYY-MM` (absolute, so a resend is harmless). */
interface ReportRequest {
  credential: string;
  months: Record<string, number>;
}

/** The directory: the one object of its namespace, by the name `directory`. */
export const directoryOf = (ns: DurableObjectNamespaceLike): DurableObjectStubLike => ns.get(ns.idFromName('directory'));
/** At most this long between a change of a credential's monthly totals and its report to the directory (decision 98). */
export const REPORT_MS = 60_000;

/** A credential's monthly totals by `YYYY-MM`, oldest first: the current month and those kept before it. */
const monthsOf = (c: Counts): Record<string, number> =>
  Object.fromEntries([...(c.past ?? []), [c.monthStart, c.month] as const].map(([start, n]) => [monthName(start), n]));

/** The Durable Object class (bind it as `QUOTAS`, class name `QuotaCounter`). */
export class QuotaCounter {
  private counts: Counts | undefined;
  /** The credential counted here, as the last request named it; stored once per instance for the alarm. */
  private credential: string | undefined;
  /** Whether an alarm is set (unknown until the first change this instance sees). */
  private alarmSet: boolean | undefined;
  /** Changes of the monthly totals so far in this instance: a report that raced one is followed by another. */
  private changes = 0;
  /** How long after a change its report is made; the tests' worker shortens it. */
  protected reportMs = REPORT_MS;

  constructor(
    private state: DurableObjectStateLike,
    private env: CounterEnv = {},
  ) {}

  async fetch(request: Request): Promise<Response> {
    const path = new URL(request.url).pathname;
    if (path === '/months') {
      // The credential's monthly totals by YYYY-MM, as billing reads them (decision 38).
      const c = this.counts ?? (await this.state.storage.get<Counts>('counts'));
      return Response.json(c ? monthsOf(c) : {});
    }
    if (path === '/refund' || path === '/record') {
      // A 304's month charge returned, or what the edge's fallback counted while this object could not be reached.
      const body = (await request.json()) as RefundRequest & RecordRequest;
      const charges: RecordRequest['charges'] = path === '/record' ? body.charges : [{ now: 0, month: body.month, kind: 'refund' }];
      if (!charges.length) return Response.json({ recorded: 0 });
      const counts = await this.load(charges[0]!.month);
      // An isolate of the release before kinds were sent only ever sent requests.
      for (const c of charges) recordCharge(counts, { ...c, kind: c.kind ?? 'request' });
      await this.state.storage.put('counts', counts);
      if (charges.some((c) => c.kind !== 'minute')) await this.changed(body.credential, false);
      return Response.json(path === '/record' ? { recorded: charges.length } : { refunded: 1 });
    }
    const { limits, now, month, use, credential } = (await request.json()) as TakeRequest;
    const counts = await this.load(month);
    const before = counts.monthStart;
    const a = admit(counts, limits, now, month, use);
    if (a.ok) {
      await this.state.storage.put('counts', counts);
      if (a.monthCharged) await this.changed(credential, counts.monthStart !== before);
    }
    return Response.json(a);
  }

  /**
   * The monthly totals changed: the directory hears of it by the alarm, set for `reportMs` from now unless one is
   * already set (so at most one report a minute however busy the credential), or at once when the month turned (the
   * month before is then final here). Without a directory bound, nothing.
   */
  private async changed(credential: string | undefined, turned: boolean): Promise<void> {
    const storage = this.state.storage;
    if (!this.env.QUOTA_DIRECTORY || !storage.setAlarm) return;
    this.changes++;
    if (credential && credential !== this.credential) {
      this.credential = credential;
      await storage.put('credential', credential);
    }
    this.alarmSet ??= (await storage.getAlarm?.()) != null;
    if (this.alarmSet && !turned) return;
    this.alarmSet = true;
    await storage.setAlarm(Date.now() + (turned ? 0 : this.reportMs));
  }

  /**
   * The alarm: every monthly total this object keeps, to the directory. A directory that cannot be reached is tried
   * again a `reportMs` later, for as long as it takes (the alarm is set again rather than left to the runtime's few
   * retries); a change made while the report was on its way is reported by the next alarm.
   */
  async alarm(): Promise<void> {
    const directory = this.env.QUOTA_DIRECTORY;
    const storage = this.state.storage;
    if (!directory || !storage.setAlarm) return;
    // Running now: a change meanwhile sets no alarm of its own, and is reported by the one set below.
    this.alarmSet = true;
    const credential = (this.credential ??= await storage.get<string>('credential'));
    const counts = this.counts ?? (await storage.get<Counts>('counts'));
    // Counted only by isolates of the release before credentials were sent: the next change names it.
    if (!credential || !counts) return void (this.alarmSet = false);
    const changes = this.changes;
    try {
      const res = await directoryOf(directory).fetch('https://quota.internal/report', {
        method: 'POST',
        body: JSON.stringify({ credential, months: monthsOf(counts) } satisfies ReportRequest),
      });
      if (!res.ok) throw new Error(`it answered ${res.status}`);
    } catch (e) {
      console.error(
        `quotas: the quota directory cannot be reached (${(e as Error).message}); reporting again in ${this.reportMs / 1000} s`,
      );
      this.alarmSet = true;
      return storage.setAlarm(Date.now() + this.reportMs);
    }
    this.alarmSet = this.changes !== changes;
    if (this.alarmSet) await storage.setAlarm(Date.now() + this.reportMs);
  }

  private async load(month: MonthWindow): Promise<Counts> {
    if (!this.counts) {
      const stored = await this.state.storage.get<Counts>('counts');
      // Objects written before monthly totals were kept have no `past`.
      this.counts = stored ? { ...stored, past: stored.past ?? [] } : newCounts(month);
    }
    return this.counts;
  }
}

/** The parts of a SQLite-backed Durable Object's storage the directory uses (`ctx.storage.sql`). */
interface SqlStorageLike {
  exec(query: string, ...bindings: (string | number)[]): { toArray(): Record<string, string | number>[] };
}

const MONTH = /^\d{4}-(0[1-9]|1[0-2])$/;
const startOf = (month: string) => Date.UTC(Number(month.slice(0, 4)), Number(month.slice(5)) - 1, 1);

/**
 * The directory of monthly totals (bind it as `QUOTA_DIRECTORY`, class name `QuotaDirectory`; one object, named
 * `directory`): each credential's requests by month as its counter last reported them, in one table, so a month's
 * totals are one query however many credentials were counted (decision 98). It keeps the months the counters keep:
 * a report of a newer month drops what is older than the MONTHS_KEPT before it.
 */
export class QuotaDirectory {
  private sql: SqlStorageLike;
  private newest: string | undefined;

  constructor(state: { storage: { sql: SqlStorageLike } }) {
    this.sql = state.storage.sql;
    this.sql.exec(
      'CREATE TABLE IF NOT EXISTS months (month TEXT NOT NULL, credential TEXT NOT NULL, requests INTEGER NOT NULL, ' +
        'PRIMARY KEY (month, credential)) WITHOUT ROWID',
    );
  }

  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === '/report' && request.method === 'POST') {
      const { credential, months } = (await request.json()) as ReportRequest;
      const valid = Object.entries(months).filter(([m, n]) => MONTH.test(m) && Number.isSafeInteger(n) && n >= 0);
      if (typeof credential !== 'string' || !credential) return new Response('no credential', { status: 400 });
      for (const [month, n] of valid)
        this.sql.exec(
          'INSERT INTO months (month, credential, requests) VALUES (?, ?, ?) ON CONFLICT (month, credential) DO UPDATE SET requests = excluded.requests',
          month,
          credential,
          n,
        );
      this.prune(valid.map(([m]) => m));
      return Response.json({ reported: valid.length });
    }
    const month = url.searchParams.get('month') ?? '';
    if (url.pathname === '/months' && MONTH.test(month)) {
      const rows = this.sql.exec('SELECT credential, requests FROM months WHERE month = ? AND requests > 0 ORDER BY credential', month);
      const credentials = Object.fromEntries(rows.toArray().map((r) => [String(r.credential), Number(r.requests)]));
      return Response.json({ month, credentials });
    }
    return new Response('not found', { status: 404 });
  }

  /** Once a report names a month newer than any before, the months older than those kept before it go. */
  private prune(months: string[]): void {
    this.newest ??= String(this.sql.exec('SELECT max(month) AS m FROM months').toArray()[0]?.m ?? '');
    const latest = months.reduce((a, b) => (b > a ? b : a), '');
    if (latest <= this.newest) return;
    this.newest = latest;
    this.sql.exec('DELETE FROM months WHERE month < ?', monthName(monthsAfter(startOf(latest), -MONTHS_KEPT)));
  }
}

export class DurableQuotaStore implements QuotaStore {
  constructor(private ns: DurableObjectNamespaceLike) {}

  /** One request to the credential's object; anything but a 2xx fails (the fallback counts meanwhile). */
  private async send(credential: string, path: string, body: TakeRequest | RefundRequest | RecordRequest): Promise<Response> {
    const res = await this.ns.get(this.ns.idFromName(credential)).fetch(`https://quota.internal/${path}`, {
      method: 'POST',
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`quota object answered ${res.status}`);
    return res;
  }

  async take(credential: string, limits: Limits, now: number, month: MonthWindow, use: MonthUse = 'request'): Promise<Admission> {
    return (await (await this.send(credential, 'take', { limits, now, month, use, credential })).json()) as Admission;
  }

  async refund(credential: string, month: MonthWindow): Promise<void> {
    await this.send(credential, 'refund', { month, credential });
  }

  /** Records what was counted elsewhere in each credential's object (FallbackQuotaStore, once the objects answer). */
  async record(charges: Charge[]): Promise<void> {
    const byCredential = new Map<string, RecordRequest['charges']>();
    for (const { credential, now, month, kind } of charges) {
      if (!byCredential.has(credential)) byCredential.set(credential, []);
      byCredential.get(credential)!.push({ now, month, kind });
    }
    for (const [credential, list] of byCredential) await this.send(credential, 'record', { charges: list, credential });
  }
}
