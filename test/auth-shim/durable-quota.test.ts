/**
 * The edge's quota store: one Durable Object per credential (here instances of the same class over an in-memory
 * storage), a 304's month charge returned to it, its monthly totals kept, and what an isolate counted while the
 * objects could not be reached recorded in them once they answer.
 */
import { describe, expect, it } from 'vitest';
import { DurableQuotaStore, QuotaCounter, type DurableObjectNamespaceLike } from '../../auth-shim/durable-quota.js';
import { FallbackQuotaStore, monthOf } from '../../auth-shim/quota.js';
import { PLAN_LIMITS } from '../../generator/contract/plans.js';

/** A namespace of QuotaCounter objects by name; `down` makes every object unreachable, as an outage would. */
function namespace(seed: Record<string, Map<string, unknown>> = {}) {
  const objects = new Map<string, QuotaCounter>();
  const state = { down: false };
  const ns: DurableObjectNamespaceLike = {
    idFromName: (name) => name,
    get: (id) => ({
      fetch: async (url, init) => {
        if (state.down) throw new Error('Durable Object unreachable');
        const name = id as string;
        if (!objects.has(name)) {
          const stored = seed[name] ?? new Map<string, unknown>();
          objects.set(
            name,
            new QuotaCounter({
              storage: {
                get: async (k) => structuredClone(stored.get(k)) as never,
                put: async (k, v) => void stored.set(k, structuredClone(v)),
              },
            }),
          );
        }
        return objects.get(name)!.fetch(new Request(url, init));
      },
    }),
  };
  const months = async (name: string) =>
    (await (await ns.get(name).fetch('https://quota.internal/months', {})).json()) as Record<string, number>;
  return { ns, state, months };
}

describe('the edge quota store', () => {
  const basic = PLAN_LIMITS.basic;
  const t0 = Date.UTC(2026, 9, 14, 12, 0, 0);

  it('records in the objects what the isolate counted during an outage, so the minute and the month miss nothing', async () => {
    const { ns, state } = namespace();
    const logged: string[] = [];
    const store = new FallbackQuotaStore(new DurableQuotaStore(ns), (m) => logged.push(m), { retryMs: 0 });
    const take = (s: number) => store.take('key:a', basic, t0 + s * 1000, monthOf(t0));
    state.down = true;
    for (let s = 0; s < 3; s++) expect((await take(s)).ok).toBe(true);
    expect(logged.join('\n')).toMatch(/the shared store cannot be reached/);
    await store.settled(); // a try made during the outage, failing
    state.down = false;
    // The objects answer again, but this process still owes them three charges: it counts this one itself, and
    // sends all four before any request reaches the objects again.
    expect((await take(3)).ok).toBe(true);
    await store.settled();
    expect(logged.join('\n')).toMatch(/the shared store is back; 4 charge\(s\) counted in this process meanwhile are recorded in it/);
    const fifth = await take(4);
    expect([fifth.ok, fifth.remaining, fifth.monthRemaining]).toEqual([true, 0, basic.perMonth - 5]);
    // Without the recording the object would have counted 1 and admitted this one too.
    expect(await take(5)).toMatchObject({ ok: false, code: 'rate_limited' });
  });

  it("returns a 304's month charge to the object, and keeps each month's total when the month turns", async () => {
    const { ns, months } = namespace();
    const store = new DurableQuotaStore(ns);
    const limits = { perMinute: 1_000, perMonth: 100 };
    const october = monthOf(t0);
    for (let i = 0; i < 3; i++) await store.take('key:b', limits, t0 + i, october);
    const revalidated = await store.take('key:b', limits, t0 + 10, october, 'revalidation');
    expect(revalidated).toMatchObject({ ok: true, monthCharged: true, monthUsed: 4 });
    await store.refund('key:b', october);
    const nov = Date.UTC(2026, 10, 2);
    expect(await store.take('key:b', limits, nov, monthOf(nov))).toMatchObject({ ok: true, monthUsed: 1 });
    expect(await months('key:b')).toEqual({ '2026-10': 3, '2026-11': 1 });
  });

  it('reads an object written before monthly totals were kept, and keeps its count', async () => {
    const old = new Map<string, unknown>([['counts', { minute: [t0 - 1_000], monthStart: monthOf(t0).start, month: 7 }]]);
    const { ns, months } = namespace({ 'key:c': old });
    const store = new DurableQuotaStore(ns);
    expect(await store.take('key:c', basic, t0, monthOf(t0))).toMatchObject({ ok: true, remaining: 3, monthUsed: 8 });
    expect(await months('key:c')).toEqual({ '2026-10': 8 });
  });

  it('a 304 during an outage: its month charge is never sent, and a refund the objects missed is sent later', async () => {
    const { ns, state, months } = namespace();
    const store = new FallbackQuotaStore(new DurableQuotaStore(ns), () => {}, { retryMs: 0 });
    const limits = { perMinute: 1_000, perMonth: 100 };
    const month = monthOf(t0);
    // Admitted by the object, refunded while it cannot be reached: owed, and sent with the rest.
    const shared = await store.take('key:d', limits, t0, month, 'revalidation');
    state.down = true;
    await store.refund('key:d', month, shared);
    // Admitted here during the outage, refunded before it was sent: sent as a request of the minute only.
    const here = await store.take('key:d', limits, t0 + 1, month, 'revalidation');
    await store.refund('key:d', month, here);
    expect((await store.take('key:d', limits, t0 + 2, month)).ok).toBe(true);
    await store.settled();
    state.down = false;
    await store.take('key:d', limits, t0 + 3, month);
    await store.settled();
    // Two plain requests in the month; both revalidations were answered 304.
    expect(await months('key:d')).toEqual({ '2026-10': 2 });
    expect(await store.take('key:d', limits, t0 + 4, month)).toMatchObject({ ok: true, minuteUsed: 5, monthUsed: 3 });
  });
});
