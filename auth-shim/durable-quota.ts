/**
 * The edge's quota store (decision 21): one Durable Object per credential (`idFromName`), so every isolate of the
 * deployment shares one count, and the object's one-request-at-a-time execution makes each charge atomic. The
 * object keeps the same counts and applies the same rule (`admit`) as the in-process stores; what an isolate
 * admitted while the objects could not be reached is charged to them when they answer again (`record`).
 */
import {
  admit,
  recordAdmitted,
  type Admission,
  type Charge,
  type Counts,
  type Limits,
  type MonthWindow,
  type QuotaStore,
} from './quota.js';

/** The parts of the Workers runtime's Durable Object API used here (no dependency on its type package). */
export interface DurableObjectStorageLike {
  get<T>(key: string): Promise<T | undefined>;
  put<T>(key: string, value: T): Promise<void>;
}
export interface DurableObjectStateLike {
  storage: DurableObjectStorageLike;
}
export interface DurableObjectStubLike {
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
}

/** The Durable Object class (bind it as `QUOTAS`, class name `QuotaCounter`). */
export class QuotaCounter {
  private counts: Counts | undefined;
  constructor(private state: DurableObjectStateLike) {}

  async fetch(request: Request): Promise<Response> {
    if (new URL(request.url).pathname === '/record') {
      // What the edge's fallback admitted while this object could not be reached, charged now.
      const { charges } = (await request.json()) as RecordRequest;
      if (!charges.length) return Response.json({ recorded: 0 });
      const counts = await this.load(charges[0]!.month);
      for (const c of charges) recordAdmitted(counts, c.now, c.month);
      await this.state.storage.put('counts', counts);
      return Response.json({ recorded: charges.length });
    }
    const { limits, now, month } = (await request.json()) as TakeRequest;
    const counts = await this.load(month);
    const a = admit(counts, limits, now, month);
    if (a.ok) await this.state.storage.put('counts', counts);
    return Response.json(a);
  }

  private async load(month: MonthWindow): Promise<Counts> {
    return (this.counts ??= (await this.state.storage.get<Counts>('counts')) ?? { minute: [], monthStart: month.start, month: 0 });
  }
}

interface RecordRequest {
  charges: Pick<Charge, 'now' | 'month'>[];
}

export class DurableQuotaStore implements QuotaStore {
  constructor(private ns: DurableObjectNamespaceLike) {}

  async take(credential: string, limits: Limits, now: number, month: MonthWindow): Promise<Admission> {
    const stub = this.ns.get(this.ns.idFromName(credential));
    const res = await stub.fetch('https://quota.internal/take', {
      method: 'POST',
      body: JSON.stringify({ limits, now, month } satisfies TakeRequest),
    });
    if (!res.ok) throw new Error(`quota object answered ${res.status}`);
    return (await res.json()) as Admission;
  }

  /** Charges admissions made elsewhere to each credential's object (FallbackQuotaStore, once the objects answer). */
  async record(charges: Charge[]): Promise<void> {
    const byCredential = new Map<string, RecordRequest['charges']>();
    for (const { credential, now, month } of charges) {
      if (!byCredential.has(credential)) byCredential.set(credential, []);
      byCredential.get(credential)!.push({ now, month });
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
