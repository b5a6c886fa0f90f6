/**
 * The edge's quota store (decision 21): one Durable Object per credential (`idFromName`), so every isolate of the
 * deployment shares one count, and the object's one-request-at-a-time execution makes each charge atomic. The
 * object keeps the same counts and applies the same rule (`admit`) as the in-process stores.
 */
import { admit, type Admission, type Counts, type Limits, type MonthWindow, type QuotaStore } from './quota.js';

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
    const { limits, now, month } = (await request.json()) as TakeRequest;
    this.counts ??= (await this.state.storage.get<Counts>('counts')) ?? { minute: [], monthStart: month.start, month: 0 };
    const a = admit(this.counts, limits, now, month);
    if (a.ok) await this.state.storage.put('counts', this.counts);
    return Response.json(a);
  }
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
}
