/**
 * The edge's quota store: one Durable Object per credential (here instances of the same class over an in-memory
 * storage), and what an isolate admitted while the objects could not be reached charged to them once they answer.
 */
import { describe, expect, it } from 'vitest';
import { DurableQuotaStore, QuotaCounter, type DurableObjectNamespaceLike } from '../../auth-shim/durable-quota.js';
import { FallbackQuotaStore, monthOf } from '../../auth-shim/quota.js';
import { PLAN_LIMITS } from '../../generator/contract/plans.js';

/** A namespace of QuotaCounter objects by name; `down` makes every object unreachable, as an outage would. */
function namespace() {
  const objects = new Map<string, QuotaCounter>();
  const state = { down: false };
  const ns: DurableObjectNamespaceLike = {
    idFromName: (name) => name,
    get: (id) => ({
      fetch: async (url, init) => {
        if (state.down) throw new Error('Durable Object unreachable');
        const name = id as string;
        if (!objects.has(name)) {
          const stored = new Map<string, unknown>();
          objects.set(
            name,
            new QuotaCounter({ storage: { get: async (k) => stored.get(k) as never, put: async (k, v) => void stored.set(k, v) } }),
          );
        }
        return objects.get(name)!.fetch(new Request(url, init));
      },
    }),
  };
  return { ns, state };
}

describe('the edge quota store', () => {
  const basic = PLAN_LIMITS.basic;
  const t0 = Date.UTC(2026, 9, 14, 12, 0, 0);

  it('charges to the objects what the isolate admitted during an outage, so the minute and the month miss nothing', async () => {
    const { ns, state } = namespace();
    const logged: string[] = [];
    const store = new FallbackQuotaStore(new DurableQuotaStore(ns), (m) => logged.push(m));
    const take = (s: number) => store.take('key:a', basic, t0 + s * 1000, monthOf(t0));
    state.down = true;
    for (let s = 0; s < 3; s++) expect((await take(s)).ok).toBe(true);
    expect(logged.join('\n')).toMatch(/the shared store cannot be reached/);
    state.down = false;
    // The objects answer again: this request is theirs, and the three admitted meanwhile are charged to them.
    expect((await take(3)).ok).toBe(true);
    await store.settled();
    expect(logged.join('\n')).toMatch(/3 request\(s\) counted in this process meanwhile are charged to it/);
    const fifth = await take(4);
    expect([fifth.ok, fifth.remaining, fifth.monthRemaining]).toEqual([true, 0, basic.perMonth - 5]);
    // Without the reconciliation the object would have counted 2 and admitted this one too.
    expect(await take(5)).toMatchObject({ ok: false, code: 'rate_limited' });
  });
});
