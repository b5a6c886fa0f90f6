/**
 * Quota stores (decision 21), each against the real thing: the rule the same in every store, counts that survive
 * a restart (the disk store, the default of `serve`), counts shared by a fleet (Redis), the fallback when the
 * shared store goes away, and the shim's whole behaviour run on every store. Tests that need Redis use REDIS_URL
 * (default redis://127.0.0.1:6379); where none answers they are skipped with the reason, except under CI=true.
 */
import { copyFileSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { createHandler } from '../../auth-shim/handler.js';
import { DurableQuotaStore, QuotaCounter, type DurableObjectNamespaceLike } from '../../auth-shim/durable-quota.js';
import { FileOrigin } from '../../auth-shim/node/file-origin.js';
import { SqliteQuotaStore } from '../../auth-shim/node/quota-sqlite.js';
import { RedisQuotaStore } from '../../auth-shim/node/quota-redis.js';
import { monthTotals } from '../../auth-shim/node/quota-totals.js';
import { liveKeys, loadKeys, startServer } from '../../auth-shim/node/server.js';
import {
  FallbackQuotaStore,
  MemoryQuotaStore,
  MINUTE_MS,
  monthOf,
  monthsAfter,
  type Admission,
  type MonthWindow,
  type QuotaStore,
} from '../../auth-shim/quota.js';
import { PLAN_LIMITS } from '../../generator/contract/plans.js';
import { revokeKeys } from '../../generator/keys.js';
import { LATE_MS, tempDir, until } from '../helpers.js';
import { redisAway, redisPrefixes, closedAtEnd, REDIS_URL } from '../services.js';
import { expectError, minuteClock, shimSuite, type Call } from './suite.js';
import { KEY, KEYS_FILE, builtTree } from './tree.js';

const noRedis = await redisAway('the Redis quota tests');

const root = tempDir('rr-quota-');
/** A key namespace of its own on the shared Redis, removed when the file ends. */
const prefix = redisPrefixes(noRedis);
/**
 * The Durable Object store's own code (the `QuotaCounter` class) behind an in-process namespace that, like the
 * runtime, runs one request per object at a time; the edge test runs the same class under workerd.
 */
function inProcessNamespace(): DurableObjectNamespaceLike {
  const objects = new Map<string, { counter: QuotaCounter; queue: Promise<unknown> }>();
  return {
    idFromName: (name) => name,
    get(id) {
      let o = objects.get(id as string);
      if (!o) {
        const data = new Map<string, unknown>();
        const storage = {
          get: async <T>(k: string) => structuredClone(data.get(k)) as T | undefined,
          put: async <T>(k: string, v: T) => void data.set(k, structuredClone(v)),
        };
        objects.set(id as string, (o = { counter: new QuotaCounter({ storage }), queue: Promise.resolve() }));
      }
      const obj = o;
      return {
        fetch: (url, init) => {
          const run = obj.queue.then(() => obj.counter.fetch(new Request(url, init)));
          obj.queue = run.catch(() => {});
          return run;
        },
      };
    },
  };
}

/** Each Durable Object store's namespace, to ask its objects for their monthly totals. */
const namespaces = new WeakMap<QuotaStore, DurableObjectNamespaceLike>();
const stores: [string, () => QuotaStore | Promise<QuotaStore>][] = [
  ['memory', () => new MemoryQuotaStore()],
  [
    'durable object',
    () => {
      const ns = inProcessNamespace();
      const s = new DurableQuotaStore(ns);
      namespaces.set(s, ns);
      return s;
    },
  ],
  ['sqlite', () => SqliteQuotaStore.open(join(root, `q-${randomBytes(4).toString('hex')}.sqlite`))],
  // A generous wait: these tests state the shared counts, not how soon a loaded machine gives up on Redis.
  ...(noRedis ? [] : [['redis', () => new RedisQuotaStore(REDIS_URL, prefix(), { timeoutMs: 10_000 })] as [string, () => QuotaStore]]),
];

/** A credential's requests in a month as the store keeps them: billing's read where there is one (disk, Redis). */
async function monthlyTotal(s: QuotaStore, credential: string, month: MonthWindow): Promise<number> {
  if (s instanceof SqliteQuotaStore) {
    await s.flush();
    return (await monthTotals(s.file, month)).get(credential) ?? 0;
  }
  if (s instanceof RedisQuotaStore) return (await monthTotals(REDIS_URL, month, s.prefix)).get(credential) ?? 0;
  if (s instanceof MemoryQuotaStore) return s.totals(month.start).get(credential) ?? 0;
  const ns = namespaces.get(s)!;
  const months = (await (await ns.get(ns.idFromName(credential)).fetch('https://quota.internal/months', {})).json()) as Record<
    string,
    number
  >;
  return months[new Date(month.start).toISOString().slice(0, 7)] ?? 0;
}
const open = closedAtEnd<QuotaStore>();

const basic = PLAN_LIMITS.basic;
const T0 = Date.UTC(2026, 9, 14, 12, 0, 0);

describe.each(stores)('the rule, in the %s store', (_name, make) => {
  it('admits the per-minute limit in any rolling 60 s, no more, and counts no refused request', async () => {
    const s = await open(make);
    const take = (t: number) => Promise.resolve(s.take('k', basic, t, monthOf(t)));
    for (let i = 0; i < 5; i++) expect(await take(T0 + 59_500 + i)).toMatchObject({ ok: true, remaining: 4 - i });
    // The burst across the minute boundary is refused, and refusals do not push the window out.
    for (let i = 0; i < 5; i++) expect(await take(T0 + 60_100 + i)).toMatchObject({ ok: false, code: 'rate_limited', retryMs: 59_400 - i });
    // At +119.5 s the first admitted request leaves the rolling minute, and exactly one more fits.
    expect(await take(T0 + 119_500)).toMatchObject({ ok: true, remaining: 0 });
    expect(await take(T0 + 119_500)).toMatchObject({ ok: false, code: 'rate_limited', retryMs: 1 });
  });

  it('counts the calendar month (UTC) exactly and starts again when it turns', async () => {
    const s = await open(make);
    const limits = { perMinute: 1000, perMonth: 3 };
    let t = Date.UTC(2026, 9, 31, 23, 59, 0);
    for (let i = 0; i < 3; i++) expect(await s.take('m', limits, (t += 1), monthOf(t))).toMatchObject({ ok: true, monthRemaining: 2 - i });
    expect(await s.take('m', limits, (t += 1), monthOf(t))).toMatchObject({
      ok: false,
      code: 'quota_exceeded',
      retryMs: Date.UTC(2026, 10, 1) - t,
      monthRemaining: 0,
    });
    t = Date.UTC(2026, 10, 1, 0, 0, 1);
    expect(await s.take('m', limits, t, monthOf(t))).toMatchObject({ ok: true, monthRemaining: 2 });
  });

  it('a revalidation is charged to the month while it has room, and a 304 gives the charge back (decision 35)', async () => {
    const s = await open(make);
    const limits = { perMinute: 1_000, perMonth: 3 };
    const month = monthOf(T0);
    expect(await s.take('r', limits, T0, month)).toMatchObject({ ok: true, monthUsed: 1, monthCharged: true });
    for (let i = 1; i <= 5; i++) {
      const a = await s.take('r', limits, T0 + i, month, 'revalidation');
      expect(a).toMatchObject({ ok: true, monthUsed: 2, monthRemaining: 1, monthCharged: true, minuteUsed: i + 1 });
      await s.refund('r', month, a);
    }
    expect(await monthlyTotal(s, 'r', month)).toBe(1);
    // The month spent: a plain request is refused and counted nowhere; a revalidation is admitted by the minute alone.
    for (let i = 0; i < 2; i++) await s.take('r', limits, T0 + 10 + i, month);
    expect(await s.take('r', limits, T0 + 20, month)).toMatchObject({ ok: false, code: 'quota_exceeded', minuteUsed: 8 });
    expect(await s.take('r', limits, T0 + 21, month, 'revalidation')).toMatchObject({
      ok: true,
      monthCharged: false,
      monthUsed: 3,
      monthRemaining: 0,
      minuteUsed: 9,
    });
    expect(await monthlyTotal(s, 'r', month)).toBe(3);
  });

  it('a spent month is said before a spent minute: the caller is told to wait for the month, not the minute', async () => {
    const s = await open(make);
    const limits = { perMinute: 3, perMonth: 2 };
    const month = monthOf(T0);
    for (let i = 0; i < 2; i++) expect(await s.take('b', limits, T0 + i, month)).toMatchObject({ ok: true });
    // The minute filled by what counts toward it alone (a HEAD, GET /v1/usage).
    expect(await s.take('b', limits, T0 + 2, month, 'minute')).toMatchObject({ ok: true, remaining: 0 });
    expect(await s.take('b', limits, T0 + 3, month)).toMatchObject({
      ok: false,
      code: 'quota_exceeded',
      retryMs: month.end - (T0 + 3),
      remaining: 0,
      minuteUsed: 3,
    });
    // What the month does not refuse still meets the minute.
    expect(await s.take('b', limits, T0 + 4, month, 'minute')).toMatchObject({ ok: false, code: 'rate_limited', retryMs: MINUTE_MS - 4 });
    expect(await monthlyTotal(s, 'b', month)).toBe(2);
  });

  it("a caller's own standing (GET /v1/usage) counts in the minute, never in the month, and is not refused by it", async () => {
    const s = await open(make);
    const limits = { perMinute: 3, perMonth: 1 };
    const month = monthOf(T0);
    expect(await s.take('u', limits, T0, month)).toMatchObject({ ok: true, monthUsed: 1 });
    expect(await s.take('u', limits, T0 + 1, month, 'minute')).toMatchObject({
      ok: true,
      monthCharged: false,
      monthUsed: 1,
      minuteUsed: 2,
      remaining: 1,
      resetMs: MINUTE_MS - 1,
    });
    expect(await s.take('u', limits, T0 + 2, month, 'minute')).toMatchObject({ ok: true, minuteUsed: 3 });
    expect(await s.take('u', limits, T0 + 3, month, 'minute')).toMatchObject({ ok: false, code: 'rate_limited', minuteUsed: 3 });
    expect(await monthlyTotal(s, 'u', month)).toBe(1);
  });

  it("keeps each month's total after the month ends: last month can be invoiced, and the twelve before it", async () => {
    const s = await open(make);
    const limits = { perMinute: 1_000, perMonth: 1_000 };
    const start = Date.UTC(2025, 8, 15);
    // One request in month 0, two in month 1, ... up to month 13 (fourteen months).
    for (let m = 0; m <= 13; m++) {
      const t = monthsAfter(monthOf(start).start, m) + 3_600_000;
      for (let i = 0; i <= m; i++) expect((await s.take('t', limits, t + i * 61_000, monthOf(t))).ok).toBe(true);
    }
    for (let m = 0; m <= 13; m++) {
      const month = monthOf(monthsAfter(monthOf(start).start, m));
      expect(await monthlyTotal(s, 't', month), new Date(month.start).toISOString()).toBe(m + 1);
    }
  });

  it('200 concurrent requests on one key: exactly the limit is admitted', async () => {
    const s = await open(make);
    const limits = PLAN_LIMITS.ultra;
    const results = await Promise.all(Array.from({ length: 200 }, () => Promise.resolve(s.take('c', limits, T0, monthOf(T0)))));
    expect(results.filter((r) => r.ok)).toHaveLength(limits.perMinute);
  });
});

describe('live keys (decision 22)', () => {
  it("a revoked key is refused within 2 s, without a restart and without touching another key's count", async () => {
    const out = builtTree();
    const keys = join(root, 'live-keys.json');
    copyFileSync(KEYS_FILE, keys);
    const { server, url } = await startServer({ publicDir: out, keysFile: keys, port: 0, watchMs: 0, quotas: new MemoryQuotaStore() });
    try {
      const get = (key: string) => fetch(`${url}/v1/assets/BTC/risk`, { headers: { 'X-API-Key': key } });
      expect((await get(KEY.pro)).status).toBe(200);
      for (let i = 0; i < 3; i++) expect((await get(KEY.basic)).status).toBe(200);
      const label = JSON.parse(readFileSync(keys, 'utf8')).keys.find((k: { plan: string }) => k.plan === 'pro').label;
      await revokeKeys(keys, { label });
      // Kept beside the keys for billing (decision 87), where the server's reload never reads a credential.
      expect(JSON.parse(readFileSync(keys, 'utf8')).revoked).toEqual([expect.objectContaining({ label, plan: 'pro' })]);
      // Polled every second: 2 s on an idle machine, and no later than a busy machine can be.
      expect(await until(async () => (await get(KEY.pro)).status === 401, 2_000 + LATE_MS, 100)).toBe(true);
      // The basic key's three requests of this minute still count.
      expect((await get(KEY.basic)).status).toBe(200);
      expect((await get(KEY.basic)).status).toBe(200);
      expect((await get(KEY.basic)).status).toBe(429);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});

describe('live keys: a key file that no longer parses', () => {
  it('leaves the previous keys in force and says why in the log', async () => {
    const keys = join(root, 'malformed-keys.json');
    copyFileSync(KEYS_FILE, keys);
    const logs: string[] = [];
    const live = liveKeys(keys, (m) => logs.push(m), 100);
    try {
      const before = live.current();
      // Written whole, under another name and renamed: a poll never sees it half written, which is another log line.
      writeFileSync(`${keys}.new`, '{"keys": [{"sha256": "nothex"');
      renameSync(`${keys}.new`, keys);
      await until(() => logs.length, 60_000, 50);
      expect(logs).toHaveLength(1);
      expect(logs[0]).toMatch(/^keys: .*malformed-keys\.json: cannot read the key store \(.+\); keeping the previous \d+ keys$/);
      expect(logs[0]).toContain(`keeping the previous ${before!.size} keys`);
      expect(live.current()).toBe(before);
    } finally {
      live.close();
    }
  });
});

/**
 * A shared store behind a switch that makes it unreachable, as an outage does, while what it holds stays: Redis
 * itself (the keys survive), or the Durable Objects.
 */
const sharedStores: [string, () => QuotaStore][] = [
  ['durable objects', () => new DurableQuotaStore(inProcessNamespace())],
  ...(noRedis ? [] : [['redis', () => new RedisQuotaStore(REDIS_URL, prefix(), { timeoutMs: 10_000 })] as [string, () => QuotaStore]]),
];

describe.each(sharedStores)('a shared store (%s) away and back', (_name, make) => {
  function outage(real: QuotaStore) {
    const state = { down: false };
    const away = () => Promise.reject(new Error('the shared store is away'));
    const flaky: QuotaStore = {
      take: (...a) => (state.down ? away() : real.take(...a)),
      refund: (...a) => (state.down ? away() : real.refund(...a)),
      record: (charges) => (state.down ? away() : real.record!(charges)),
      close: () => real.close?.() ?? Promise.resolve(),
    };
    return { flaky, state };
  }

  it('admits no more than the limit in any rolling minute: before, during and after the outage', async () => {
    const shared = await open(make);
    const { flaky, state } = outage(shared);
    const store = new FallbackQuotaStore(flaky, () => {}, { retryMs: 0 });
    const limits = { perMinute: 10, perMonth: 100_000 };
    const t = Date.UTC(2026, 9, 20, 9, 0, 0);
    const month = monthOf(t);
    const burst = async (n: number, at: number) =>
      (await Promise.all(Array.from({ length: n }, (_, i) => Promise.resolve(store.take('k', limits, at + i, month))))).filter((a) => a.ok)
        .length;
    let admitted = await burst(4, t);
    expect(admitted).toBe(4);
    state.down = true;
    // This process goes on from what the shared store said: six more, not ten.
    admitted += await burst(20, t + 1_000);
    expect(admitted).toBe(10);
    state.down = false;
    // Back: bursts while the charges owed are recorded, then after. The minute is full until t + 60 s.
    for (let i = 0; i < 5; i++) admitted += await burst(20, t + 2_000 + i * 1_000);
    await store.settled();
    admitted += await burst(20, t + 10_000);
    expect(admitted).toBe(10);
    // The shared store has every one of them, and the minute frees as they age out of it.
    expect(await shared.take('k', limits, t + 59_000, month)).toMatchObject({ ok: false, code: 'rate_limited', minuteUsed: 10 });
    expect(await store.take('k', limits, t + 60_001, month)).toMatchObject({ ok: true, monthUsed: 11 });
  });
});

describe('a shared store answering every request', () => {
  it("the fallback's copy of the counts keeps the last minute, not every request it ever mirrored", async () => {
    // Each answer the shared store gives is mirrored here, so the fallback goes on from it: 2,000,000 requests of one
    // key over 55 hours (one each 100 ms) would keep 16 MB of times if the minute kept them all.
    const answer: Admission = {
      ok: true,
      remaining: 1,
      resetMs: 1,
      retryMs: 0,
      monthRemaining: 1,
      minuteUsed: 1,
      monthUsed: 1,
      monthCharged: true,
    };
    const store = new FallbackQuotaStore({ take: () => answer, refund: () => {} }, () => {});
    const limits = { perMinute: 1_000, perMonth: 1e12 };
    const t = Date.UTC(2026, 9, 1);
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    await store.take('k', limits, t, monthOf(t));
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 1; i < 2_000_000; i++) await store.take('k', limits, t + i * 100, monthOf(t + i * 100));
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    // The store is still in use (so the collection above could not take it), and still counts.
    expect(await store.take('k', limits, t + 2_000_000 * 100, monthOf(t + 2_000_000 * 100))).toMatchObject({ ok: true });
    expect(grown).toBeLessThan(4 * 1024 * 1024);
  });
});

describe.each(stores)('the shim on the %s store', (name, make) => {
  let out = '';
  let call: Call;
  beforeAll(async () => {
    out = builtTree();
    const handle = createHandler({
      origin: FileOrigin.open(out, 0),
      keys: loadKeys(KEYS_FILE),
      quotas: await open(make),
      now: minuteClock(),
      marketplace: { host: 'risk-readings.marketplace.example', secret: 'proxy-secret-for-tests' },
    });
    call = (path, init = {}) => handle(new Request(`http://shim.test${path}`, { method: init.method ?? 'GET', headers: init.headers }));
  });
  shimSuite(`${name} store`, () => ({ call, out }));
  it("refuses past the limit with 429 and the spec's code", async () => {
    const t = Date.UTC(2026, 9, 20, 8, 0, 0);
    const handle = createHandler({ origin: FileOrigin.open(out, 0), keys: loadKeys(KEYS_FILE), quotas: await open(make), now: () => t });
    const get = () => handle(new Request('http://shim.test/v1/assets/BTC/risk', { headers: { 'X-API-Key': KEY.basic } }));
    for (let i = 0; i < 5; i++) expect((await get()).status).toBe(200);
    await expectError(await get(), 429, 'rate_limited');
  });
});
