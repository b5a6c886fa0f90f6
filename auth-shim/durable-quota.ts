/**
 * The edge's quota store (decision 21): one Durable Object per credential (`idFromName`), so every isolate of the
 * deployment shares one count, and the object's one-request-at-a-time execution makes each charge atomic. The
 * object keeps the same counts and applies the same rule (`admit`) as the in-process stores, monthly totals
 * included (decision 38: the current month and the thirteen before it); a 304's month charge is returned to it
 * (`refund`), and what an isolate counted while the objects could not be reached is recorded in them when they
 * answer again (`record`).
 */
import {
  admit,
  monthName,
  newCounts,
  recordCharge,
  refundMonth,
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

interface TakeRequest {
  limits: Limits;
  now: number;
  month: MonthWindow;
  use?: MonthUse;
}

interface RefundRequest {
  month: MonthWindow;
}

interface RecordRequest {
  charges: Pick<Charge, 'now' | 'month' | 'kind'>[];
}

/** The Durable Object class (bind it as `QUOTAS`, class name `QuotaCounter`). */
export class QuotaCounter {
  private counts: Counts | undefined;
  constructor(private state: DurableObjectStateLike) {}

  async fetch(request: Request): Promise<Response> {
    const path = new URL(request.url).pathname;
    if (path === '/months') {
      // The credential's monthly totals by YYYY-MM, as billing reads them (decision 38).
      const c = this.counts ?? (await this.state.storage.get<Counts>('counts'));
      const totals = c ? [...(c.past ?? []), [c.monthStart, c.month]] : [];
      return Response.json(Object.fromEntries(totals.map(([start, n]) => [monthName(start!), n])));
    }
    if (path === '/refund') {
      const { month } = (await request.json()) as RefundRequest;
      const counts = await this.load(month);
      refundMonth(counts, month);
      await this.state.storage.put('counts', counts);
      return Response.json({ refunded: 1 });
    }
    if (path === '/record') {
      // What the edge's fallback counted while this object could not be reached, recorded now.
      const { charges } = (await request.json()) as RecordRequest;
      if (!charges.length) return Response.json({ recorded: 0 });
      const counts = await this.load(charges[0]!.month);
      // An isolate of the release before kinds were sent only ever sent requests.
      for (const c of charges) recordCharge(counts, { ...c, kind: c.kind ?? 'request' });
      await this.state.storage.put('counts', counts);
      return Response.json({ recorded: charges.length });
    }
    const { limits, now, month, use } = (await request.json()) as TakeRequest;
    const counts = await this.load(month);
    const a = admit(counts, limits, now, month, use);
    if (a.ok) await this.state.storage.put('counts', counts);
    return Response.json(a);
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

export class DurableQuotaStore implements QuotaStore {
  constructor(private ns: DurableObjectNamespaceLike) {}

  async take(credential: string, limits: Limits, now: number, month: MonthWindow, use: MonthUse = 'request'): Promise<Admission> {
    const stub = this.ns.get(this.ns.idFromName(credential));
    const res = await stub.fetch('https://quota.internal/take', {
      method: 'POST',
      body: JSON.stringify({ limits, now, month, use } satisfies TakeRequest),
    });
    if (!res.ok) throw new Error(`quota object answered ${res.status}`);
    return (await res.json()) as Admission;
  }

  async refund(credential: string, month: MonthWindow): Promise<void> {
    const stub = this.ns.get(this.ns.idFromName(credential));
    const res = await stub.fetch('https://quota.internal/refund', {
      method: 'POST',
      body: JSON.stringify({ month } satisfies RefundRequest),
    });
    if (!res.ok) throw new Error(`quota object answered ${res.status}`);
  }

  /** Records what was counted elsewhere in each credential's object (FallbackQuotaStore, once the objects answer). */
  async record(charges: Charge[]): Promise<void> {
    const byCredential = new Map<string, RecordRequest['charges']>();
    for (const { credential, now, month, kind } of charges) {
      if (!byCredential.has(credential)) byCredential.set(credential, []);
      byCredential.get(credential)!.push({ now, month, kind });
    }
    for (const [credential, list] of byCredential) {
      const stub = this.ns.get(this.ns.idFromName(credential));
      const res = await stub.fetch('https://quota.internal/record', {
        method: 'POST',
        body: JSON.stringify({ charges: list } satisfies RecordRequest),
      });
      if (!res.ok) throw new Error(`quota object answered ${res.status}`);
    }
  }
}
