/**
 * The Redis store (decision 21): a fleet shares its counts, and a Redis that stops, stalls or drops its connection
 * never takes the API down nor bills a request twice. Tests use REDIS_URL (default redis://127.0.0.1:6379) and
 * private redis-server processes; where none answers they are skipped with the reason, except under CI=true.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHandler } from '../../../auth-shim/handler.js';
import { FileOrigin } from '../../../auth-shim/node/file-origin.js';
import { keepMs, RedisQuotaStore } from '../../../auth-shim/node/quota-redis.js';
import { loadKeys, startServer } from '../../../auth-shim/node/server.js';
import { FallbackQuotaStore, monthOf, type Admission, type QuotaStore } from '../../../auth-shim/quota.js';
import { PLAN_LIMITS } from '../../../generator/contract/plans.js';
import { until } from '../../helpers.js';
import { freePort, redisAnswers, redisAway, REDIS_URL } from '../../services.js';
import { minuteClock, type Call } from '../suite.js';
import { KEY, KEYS_FILE, builtTree } from '../tree.js';

const noRedis = await redisAway('the Redis quota tests');

const prefixes: string[] = [];
/** A key namespace of its own on the shared Redis (other engineers' tests use it too), removed when the file ends. */
const prefix = () => {
  const p = `rr:test:${randomBytes(6).toString('hex')}:`;
  prefixes.push(p);
  return p;
};
const opened: QuotaStore[] = [];
const open = async <S extends QuotaStore>(make: () => S | Promise<S>): Promise<S> => {
  const s = await make();
  opened.push(s);
  return s;
};
afterAll(async () => {
  for (const s of opened) await s.close?.();
  if (noRedis || !prefixes.length) return;
  const r = new Redis(REDIS_URL, { maxRetriesPerRequest: 0 });
  try {
    for (const p of prefixes) {
      const keys: string[] = [];
      for await (const batch of r.scanStream({ match: `${p}*`, count: 1_000 }) as AsyncIterable<string[]>) keys.push(...batch);
      if (keys.length) await r.del(...keys);
    }
  } finally {
    r.disconnect();
  }
});

describe.skipIf(noRedis !== null)(`Redis: a fleet shares its counts (skipped: ${noRedis ?? 'Redis answers'})`, () => {
  let out = '';
  beforeAll(async () => {
    out = builtTree();
  });

  it('two Node servers on one Redis together admit exactly the limit', async () => {
    const shared = prefix();
    const t = Date.UTC(2026, 9, 14, 12, 0, 0);
    const servers = await Promise.all(
      [0, 1].map(async () =>
        startServer({
          publicDir: out,
          keysFile: KEYS_FILE,
          port: 0,
          watchMs: 0,
          // A generous wait: a loaded machine must not turn a slow answer into an error here.
          quotas: await open(() => new RedisQuotaStore(REDIS_URL, shared, { timeoutMs: 10_000 })),
          now: () => t,
        }),
      ),
    );
    try {
      const statuses = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          fetch(`${servers[i % 2]!.url}/v1/assets/BTC/risk`, { headers: { 'X-API-Key': KEY.ultra } }).then((r) => r.status),
        ),
      );
      expect(statuses.filter((s) => s === 200)).toHaveLength(PLAN_LIMITS.ultra.perMinute);
      expect(statuses.filter((s) => s === 429)).toHaveLength(100 - PLAN_LIMITS.ultra.perMinute);
    } finally {
      await Promise.all(servers.map((s) => new Promise((r) => s.server.close(r))));
    }
  });

  it('Redis back after an outage: every request the fallback admitted meanwhile is charged to it', async () => {
    const port = await freePort();
    const start = () =>
      spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    const url = `redis://127.0.0.1:${port}`;
    let redis = start();
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false });
    client.on('error', () => {});
    try {
      await until(async () => !(await redisAnswers(url)), 5_000, 100);
      const logs: string[] = [];
      const ns = prefix();
      const store = (await open(() => new FallbackQuotaStore(new RedisQuotaStore(url, ns), (m) => logs.push(m)))) as FallbackQuotaStore;
      const limits = { perMinute: 1_000, perMonth: 100_000 };
      const t = Date.now();
      redis.kill('SIGKILL');
      await new Promise((r) => redis.on('exit', r));
      for (let i = 0; i < 7; i++) expect((await store.take('k', limits, t + i, monthOf(t))).ok).toBe(true);
      redis = start();
      // The shared store answers again (its client reconnects): the first request it takes charges what was owed.
      let waited = 0;
      await until(
        async () => (
          await store.take('k', limits, t + 100 + waited++, monthOf(t)),
          logs.some((l) => l.includes('the shared store is back'))
        ),
        10_000,
        200,
      );
      await store.settled();
      await client.connect();
      // Redis started empty: every request since it stopped is in its month, whether counted there or owed to it.
      expect(Number(await client.get(`${ns}k:month:${monthOf(t).start}`))).toBe(7 + waited);
      const back = logs.filter((l) => l.includes('the shared store is back'));
      expect(back).toHaveLength(1);
      expect(back[0]).toMatch(/^quotas: the shared store is back; (\d+) charge\(s\) counted in this process meanwhile are recorded in it$/);
      expect(Number(/; (\d+) charge/.exec(back[0]!)![1])).toBeGreaterThanOrEqual(7);
      // Kept for billing: the month's counter outlives the month by thirteen months.
      expect(await client.pttl(`${ns}k:month:${monthOf(t).start}`)).toBeGreaterThan(keepMs(monthOf(t), Date.now()) - 60_000);
      expect(keepMs(monthOf(t), t)).toBeGreaterThan(13 * 30 * 86_400_000);
    } finally {
      client.disconnect();
      redis.kill('SIGKILL');
    }
  });

  it('Redis that stops answering (paused): each charge waits its own timeout, then the fallback answers', async () => {
    const { url, redis } = await privateRedis();
    try {
      const logs: string[] = [];
      const store = await open(() => new FallbackQuotaStore(new RedisQuotaStore(url, prefix(), { timeoutMs: 300 }), (m) => logs.push(m)));
      const limits = { perMinute: 1_000, perMonth: 100_000 };
      const t = Date.now();
      expect((await store.take('k', limits, t, monthOf(t))).ok).toBe(true);
      redis.kill('SIGSTOP');
      // Two charges 150 ms apart while Redis hangs: each is answered by the fallback, neither before its own 300 ms.
      const started = performance.now();
      const answeredAt = (p: Admission | Promise<Admission>) =>
        Promise.resolve(p).then((a) => ({ ok: a.ok, ms: performance.now() - started }));
      const first = answeredAt(store.take('k', limits, t + 1, monthOf(t)));
      await new Promise((r) => setTimeout(r, 150));
      const second = answeredAt(store.take('k', limits, t + 2, monthOf(t)));
      const [a, b] = await Promise.all([first, second]);
      expect(a.ok && b.ok).toBe(true);
      expect(a.ms).toBeGreaterThanOrEqual(295);
      expect(b.ms).toBeGreaterThanOrEqual(445);
      expect(b.ms).toBeGreaterThan(a.ms);
      expect(logs).toHaveLength(1);
      expect(logs[0]).toContain('Redis did not answer within 300 ms');
    } finally {
      redis.kill('SIGCONT');
      redis.kill('SIGKILL');
    }
  });

  it('Redis that stops answering: the store waits for the next deadline, never arming a timer in the past', async () => {
    const { url, redis } = await privateRedis();
    const timers: number[] = [];
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    const realSetTimeout = globalThis.setTimeout;
    try {
      const store = await open(() => new RedisQuotaStore(url, prefix(), { timeoutMs: 300 }));
      const limits = { perMinute: 1_000, perMonth: 100_000 };
      const t = Date.now();
      expect((await store.take('k', limits, t, monthOf(t))).ok).toBe(true);
      redis.kill('SIGSTOP');
      process.on('warning', onWarning);
      // The store's own timers (other tests' stores and clients run their own in this process meanwhile).
      const fromStore = () => /auth-shim[/\\]node[/\\]quota-stores/.test(new Error().stack ?? '');
      globalThis.setTimeout = ((fn: () => void, ms?: number) => {
        if (fromStore()) timers.push(ms ?? 0);
        return realSetTimeout(fn, ms);
      }) as typeof setTimeout;
      // The first charge's deadline passes while the second still waits, 150 ms behind it: one timer for each.
      const first = Promise.resolve(store.take('k', limits, t + 1, monthOf(t))).catch((e: Error) => e.message);
      await new Promise((r) => realSetTimeout(r, 150));
      const second = Promise.resolve(store.take('k', limits, t + 2, monthOf(t))).catch((e: Error) => e.message);
      expect(await Promise.all([first, second])).toEqual(['Redis did not answer within 300 ms', 'Redis did not answer within 300 ms']);
      // Node 24 warns on a timer armed in the past (TimeoutNegativeWarning), and such a timer fires every millisecond
      // (75 of them in these 450 ms, when it was so). The deadlines' timers (ioredis's own command timeout is 10 s)
      // are each in the future: one per charge waiting, and a few more where a timer fired before the deadline by
      // the store's clock (Node counts a timer from the event loop's time, which a busy turn leaves behind).
      expect(timers.filter((ms) => ms < 0)).toEqual([]);
      expect(timers.filter((ms) => ms <= 300).length).toBeLessThanOrEqual(8);
      expect(warnings).toEqual([]);
    } finally {
      globalThis.setTimeout = realSetTimeout;
      process.off('warning', onWarning);
      redis.kill('SIGCONT');
      redis.kill('SIGKILL');
    }
  });

  it('Redis stopped mid-run: the shim answers from its fallback, never 5xx, and logs it once', async () => {
    const { url, redis } = await privateRedis();
    try {
      const logs: string[] = [];
      const store = await open(() => new FallbackQuotaStore(new RedisQuotaStore(url, prefix()), (m) => logs.push(m)));
      const origin = FileOrigin.open(out, 0);
      const handle = createHandler({ origin, keys: loadKeys(KEYS_FILE), quotas: store, now: minuteClock() });
      const call: Call = (path, init = {}) => handle(new Request(`http://shim.test${path}`, { headers: init.headers }));
      expect((await call('/v1/assets/BTC/risk', { headers: { 'X-API-Key': KEY.pro } })).status).toBe(200);
      expect(logs).toEqual([]);
      redis.kill('SIGKILL');
      await new Promise((r) => redis.on('exit', r));
      for (let i = 0; i < 5; i++) expect((await call('/v1/assets/BTC/risk', { headers: { 'X-API-Key': KEY.pro } })).status).toBe(200);
      expect(logs).toHaveLength(1);
      expect(logs[0]).toMatch(/^quotas: the shared store cannot be reached \(.+\); counting in this process until it is back$/);
    } finally {
      redis.kill('SIGKILL');
    }
  });
});

/** A Redis of the test's own on a free port, answering: to pause or kill without touching the shared one. */
async function privateRedis(): Promise<{ url: string; redis: ChildProcess }> {
  const port = await freePort();
  const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  const url = `redis://127.0.0.1:${port}`;
  try {
    await until(async () => !(await redisAnswers(url)), 5_000, 100);
  } catch (e) {
    redis.kill('SIGKILL');
    throw e;
  }
  return { url, redis };
}
