/**
 * The edge's quota store: one Durable Object per credential (here instances of the same class over an in-memory
 * storage), a 304's month charge returned to it, its monthly totals kept, and what an isolate counted while the
 * objects could not be reached recorded in them once they answer. Each counter reports its monthly totals to the
 * quota directory by its alarm (decision 98): here the alarm is a time the test reads and runs itself, and the
 * directory the same class over node:sqlite (workerd runs both for real in edge-usage.test.ts).
 */
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import {
  DurableQuotaStore,
  QuotaCounter,
  QuotaDirectory,
  REPORT_MS,
  type DurableObjectNamespaceLike,
} from '../../auth-shim/durable-quota.js';
import { FallbackQuotaStore, monthOf } from '../../auth-shim/quota.js';
import { PLAN_LIMITS } from '../../generator/contract/plans.js';
import { until } from '../helpers.js';

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

/** The quota directory over an in-memory SQLite database, as its namespace; `down` makes it unreachable. */
function directory() {
  const db = new DatabaseSync(':memory:');
  const sql = {
    exec: (query: string, ...bindings: (string | number)[]) => {
      const rows = db.prepare(query).all(...bindings) as Record<string, string | number>[];
      return { toArray: () => rows };
    },
  };
  const object = new QuotaDirectory({ storage: { sql } });
  const state = { down: false, reports: 0, hold: null as Promise<void> | null };
  const ns: DurableObjectNamespaceLike = {
    idFromName: (name) => name,
    get: (id) => ({
      fetch: async (url, init) => {
        expect(id).toBe('directory');
        if (state.down) throw new Error('Durable Object unreachable');
        if (url.endsWith('/report')) state.reports++;
        if (state.hold) await state.hold;
        return object.fetch(new Request(url, init));
      },
    }),
  };
  const month = async (m: string) =>
    (
      (await (await ns.get('directory').fetch(`https://quota.internal/months?month=${m}`, {})).json()) as {
        credentials: Record<string, number>;
      }
    ).credentials;
  return { ns, state, month, db };
}

/**
 * One credential's counter with an alarm the test runs (`runAlarm`, as the runtime would at `alarm`), reporting to
 * `dir`; `puts` lists the keys written.
 */
function counter(dir?: DurableObjectNamespaceLike) {
  const data = new Map<string, unknown>();
  const clock = { alarm: null as number | null, puts: [] as string[] };
  const storage = {
    get: async <T>(k: string) => structuredClone(data.get(k)) as T | undefined,
    put: async <T>(k: string, v: T) => void (clock.puts.push(k), data.set(k, structuredClone(v))),
    getAlarm: async () => clock.alarm,
    setAlarm: async (at: number) => void (clock.alarm = at),
  };
  const object = new QuotaCounter({ storage }, dir ? { QUOTA_DIRECTORY: dir } : {});
  const ns: DurableObjectNamespaceLike = {
    idFromName: (n) => n,
    get: () => ({ fetch: (url, init) => object.fetch(new Request(url, init)) }),
  };
  /** The runtime's way: the alarm is spent as it runs, unless the handler sets another. */
  const runAlarm = async () => {
    clock.alarm = null;
    await object.alarm();
  };
  return { store: new DurableQuotaStore(ns), clock, runAlarm, object };
}

describe('the quota directory: each counter reports its monthly totals, the operator reads a month in one request', () => {
  const limits = { perMinute: 1_000, perMonth: 1_000 };
  const t0 = Date.UTC(2026, 9, 14, 12, 0, 0);
  const october = monthOf(t0);

  it('a change is reported by an alarm a minute later, one alarm however many changes; a month turning at once', async () => {
    const dir = directory();
    const c = counter(dir.ns);
    const before = Date.now();
    await c.store.take('key:a', limits, t0, october);
    const at = c.clock.alarm!;
    expect(at).toBeGreaterThanOrEqual(before + REPORT_MS);
    expect(at).toBeLessThanOrEqual(Date.now() + REPORT_MS);
    for (let i = 1; i < 4; i++) await c.store.take('key:a', limits, t0 + i, october);
    expect(c.clock.alarm).toBe(at);
    expect(await dir.month('2026-10')).toEqual({});
    await c.runAlarm();
    expect(await dir.month('2026-10')).toEqual({ 'key:a': 4 });
    expect([dir.state.reports, c.clock.alarm]).toEqual([1, null]);

    // A request of the month after: the month before is final here, so the report is made at once.
    const nov = Date.UTC(2026, 10, 1, 0, 0, 1);
    await c.store.take('key:a', limits, nov, monthOf(nov));
    expect(c.clock.alarm).toBeLessThanOrEqual(Date.now());
    await c.runAlarm();
    expect([await dir.month('2026-10'), await dir.month('2026-11')]).toEqual([{ 'key:a': 4 }, { 'key:a': 1 }]);
  });

  it('what does not change a month sets no alarm; a refund and charges recorded after an outage are reported', async () => {
    const dir = directory();
    const c = counter(dir.ns);
    // Counted in the minute alone (GET /v1/usage, decision 36): the month's total is unchanged.
    await c.store.take('key:b', limits, t0, october, 'minute');
    expect(c.clock.alarm).toBeNull();
    const a = await c.store.take('key:b', limits, t0 + 1, october, 'revalidation');
    expect(a.monthCharged).toBe(true);
    await c.runAlarm();
    expect(await dir.month('2026-10')).toEqual({ 'key:b': 1 });
    // The 304's charge returned: the month is 0 again, and the directory says so.
    await c.store.refund('key:b', october);
    expect(c.clock.alarm).not.toBeNull();
    await c.runAlarm();
    expect(await dir.month('2026-10')).toEqual({});
    await c.store.record([1, 2, 3].map((i) => ({ credential: 'key:b', now: t0 + 10 + i, month: october, kind: 'request' as const })));
    await c.runAlarm();
    expect(await dir.month('2026-10')).toEqual({ 'key:b': 3 });
  });

  it('a directory that cannot be reached is tried again a minute later; a change made during a report is reported next', async () => {
    const dir = directory();
    const c = counter(dir.ns);
    const errors: string[] = [];
    const error = console.error;
    console.error = (m: string) => void errors.push(m);
    try {
      await c.store.take('key:c', limits, t0, october);
      dir.state.down = true;
      const before = Date.now();
      await c.runAlarm();
      expect(c.clock.alarm).toBeGreaterThanOrEqual(before + REPORT_MS);
      expect(errors).toEqual(['quotas: the quota directory cannot be reached (Durable Object unreachable); reporting again in 60 s']);
      dir.state.down = false;
      // The report is on its way when the credential is counted again: that change sets no alarm of its own...
      let release = () => {};
      dir.state.hold = new Promise<void>((r) => (release = r));
      c.clock.alarm = null;
      const report = c.object.alarm();
      await until(() => dir.state.reports === 1);
      await c.store.take('key:c', limits, t0 + 1, october);
      expect(c.clock.alarm).toBeNull();
      release();
      dir.state.hold = null;
      await report;
      // ...and is reported by the alarm the report sets as it ends.
      expect(c.clock.alarm).not.toBeNull();
      await c.runAlarm();
      expect(await dir.month('2026-10')).toEqual({ 'key:c': 2 });
      expect(c.clock.alarm).toBeNull();
    } finally {
      console.error = error;
    }
  });

  it('without a directory bound a counter sets no alarm and writes only its counts, as before', async () => {
    const c = counter();
    for (let i = 0; i < 3; i++) await c.store.take('key:d', limits, t0 + i, october);
    await c.store.refund('key:d', october);
    expect(c.clock.alarm).toBeNull();
    expect(new Set(c.clock.puts)).toEqual(new Set(['counts']));
  });

  it('keeps the months the counters keep: a report of a newer month drops those older than the 13 before it', async () => {
    const dir = directory();
    const report = (credential: string, months: Record<string, number>) =>
      dir.ns.get('directory').fetch('https://quota.internal/report', { method: 'POST', body: JSON.stringify({ credential, months }) });
    await report('key:e', { '2025-09': 2, '2025-10': 3, '2026-10': 5 });
    await report('key:f', { '2025-09': 7, '2026-10': 1 });
    expect(await dir.month('2025-09')).toEqual({ 'key:e': 2, 'key:f': 7 });
    await report('key:e', { '2025-10': 3, '2026-10': 5, '2026-11': 1 });
    // November 2026 keeps October 2025 and after: September 2025 is gone for every credential.
    expect(await dir.month('2025-09')).toEqual({});
    expect(await dir.month('2025-10')).toEqual({ 'key:e': 3 });
    expect(await dir.month('2026-10')).toEqual({ 'key:e': 5, 'key:f': 1 });
  });
});
