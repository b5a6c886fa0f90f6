/**
 * Quota stores (decision 21), each against the real thing: the rule the same in every store, counts that survive
 * a restart (the disk store, the default of `serve`), counts shared by a fleet (Redis), the fallback when the
 * shared store goes away, and the shim's whole behaviour run on every store. Tests that need Redis use REDIS_URL
 * (default redis://127.0.0.1:6379); where none answers they are skipped with the reason, except under CI=true.
 */
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHandler } from '../../auth-shim/handler.js';
import { DurableQuotaStore, QuotaCounter, type DurableObjectNamespaceLike } from '../../auth-shim/durable-quota.js';
import { FileOrigin } from '../../auth-shim/node/file-origin.js';
import { DiskQuotaStore, QuotaFileHeld, RedisQuotaStore } from '../../auth-shim/node/quota-stores.js';
import { liveKeys, loadKeys, startServer } from '../../auth-shim/node/server.js';
import { FallbackQuotaStore, MemoryQuotaStore, monthOf, type QuotaStore } from '../../auth-shim/quota.js';
import { PLAN_LIMITS } from '../../generator/contract/plans.js';
import { revokeKeys } from '../../generator/keys.js';
import { BIN, cliAsync, tempDir, until } from '../helpers.js';
import { expectError, minuteClock, shimSuite, type Call } from './suite.js';
import { KEY, KEYS_FILE, builtTree } from './tree.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
async function redisAnswers(url: string): Promise<string | null> {
  const r = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 1_000,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  r.on('error', () => {});
  try {
    await r.connect();
    await r.ping();
    return null;
  } catch (e) {
    return `no Redis answers at ${url} (${(e as Error).message})`;
  } finally {
    r.disconnect();
  }
}
const noRedis = await redisAnswers(REDIS_URL);
if (noRedis && process.env.CI === 'true') throw new Error(`CI=true and ${noRedis}: the Redis quota tests cannot run`);

const root = tempDir('rr-quota-');
const prefix = () => `rr:test:${randomBytes(6).toString('hex')}:`;
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

const stores: [string, () => QuotaStore | Promise<QuotaStore>][] = [
  ['memory', () => new MemoryQuotaStore()],
  ['durable object', () => new DurableQuotaStore(inProcessNamespace())],
  ['disk', () => DiskQuotaStore.open(join(root, `q-${randomBytes(4).toString('hex')}.json`))],
  ...(noRedis ? [] : [['redis', () => new RedisQuotaStore(REDIS_URL, prefix())] as [string, () => QuotaStore]]),
];
const opened: QuotaStore[] = [];
const open = async <S extends QuotaStore>(make: () => S | Promise<S>): Promise<S> => {
  const s = await make();
  opened.push(s);
  return s;
};
afterAll(async () => {
  for (const s of opened) await s.close?.();
});

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

  it('200 concurrent requests on one key: exactly the limit is admitted', async () => {
    const s = await open(make);
    const limits = PLAN_LIMITS.ultra;
    const results = await Promise.all(Array.from({ length: 200 }, () => Promise.resolve(s.take('c', limits, T0, monthOf(T0)))));
    expect(results.filter((r) => r.ok)).toHaveLength(limits.perMinute);
  });
});

describe('the disk store (the default of serve)', () => {
  it('a restart in the middle of a window keeps the count', async () => {
    const file = join(root, 'restart.json');
    const a = await DiskQuotaStore.open(file);
    for (let i = 0; i < 3; i++) expect(a.take('k', basic, T0 + i, monthOf(T0)).ok).toBe(true);
    await a.close();
    const b = await DiskQuotaStore.open(file);
    opened.push(b);
    expect(b.take('k', basic, T0 + 10, monthOf(T0))).toMatchObject({ ok: true, remaining: 1 });
    expect(b.take('k', basic, T0 + 11, monthOf(T0)).ok).toBe(true);
    expect(b.take('k', basic, T0 + 12, monthOf(T0))).toMatchObject({ ok: false, code: 'rate_limited' });
  });

  it('one process counts per file: a second waits for the first to save and let go (a rolling restart), then counts on', async () => {
    const file = join(root, 'rolling.json');
    const a = await DiskQuotaStore.open(file);
    for (let i = 0; i < 3; i++) expect(a.take('k', basic, T0 + i, monthOf(T0)).ok).toBe(true);
    let b: DiskQuotaStore | undefined;
    const waiting = DiskQuotaStore.open(file, { waitMs: 5_000 }).then((s) => (b = s));
    await new Promise((r) => setTimeout(r, 300));
    expect(b).toBeUndefined();
    await a.close();
    opened.push(await waiting);
    expect(b!.take('k', basic, T0 + 10, monthOf(T0))).toMatchObject({ ok: true, remaining: 1 });
  });

  it('a second process the first never lets go of is refused, naming the holder and what to use instead', async () => {
    const file = join(root, 'held.json');
    await open(() => DiskQuotaStore.open(file));
    const error = await DiskQuotaStore.open(file, { waitMs: 300 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QuotaFileHeld);
    expect((error as Error).message).toMatch(
      new RegExp(`^${file}\\.lock: another process counts in this quota file \\(pid ${process.pid} `),
    );
    expect((error as Error).message).toContain('--quotas redis://HOST:PORT');
  });

  it('serve on a quota file another serve holds exits 3 with that message', async () => {
    const file = join(root, 'served.json');
    const out = builtTree();
    const [p1, p2] = [String(await freePort()), String(await freePort())];
    const first = spawn(process.execPath, [BIN, 'serve', '--public', out, '--keys', KEYS_FILE, '--port', p1, '--quotas', file]);
    try {
      expect(await until(() => existsSync(`${file}.lock`))).toBe(true);
      const args = ['serve', '--public', out, '--keys', KEYS_FILE, '--port', p2, '--quotas', file, '--quotas-wait', '1s'];
      const second = await cliAsync(args);
      expect(second.status).toBe(3);
      expect(second.stderr).toMatch(/another process counts in this quota file \(pid \d+ .*waited 1 s\. One process counts per quota file/);
    } finally {
      first.kill('SIGTERM');
      await new Promise((r) => first.once('exit', r));
    }
    expect(existsSync(`${file}.lock`)).toBe(false);
  });

  it('writes at most a second after a change, without a close', async () => {
    const file = join(root, 'flush.json');
    const s = await open(() => DiskQuotaStore.open(file, { flushMs: 100 }));
    s.take('k', basic, T0, monthOf(T0));
    const written = await until(() => {
      try {
        return JSON.parse(readFileSync(file, 'utf8')).credentials.k;
      } catch {
        return undefined; // not written yet
      }
    }, 1_000);
    expect(written).toMatchObject({ minute: [T0], month: 1 });
  });

  it('serve flushes on SIGTERM: a basic key keeps its count across a restart of the real server', async () => {
    const out = builtTree();
    const quotas = join(root, 'cli-quotas.json');
    const serve = async () => {
      const port = await freePort();
      const child = spawn(
        process.execPath,
        [BIN, 'serve', '--public', out, '--keys', KEYS_FILE, '--quotas', quotas, '--port', String(port)],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stdout = '';
      child.stdout.on('data', (d) => (stdout += String(d)));
      await new Promise<void>((resolve, reject) => {
        child.stderr.on('data', (d) => String(d).includes('serving') && resolve());
        child.on('exit', (code) => reject(new Error(`serve exited ${code}`)));
      });
      return {
        child,
        log: () => stdout,
        get: (path: string) => fetch(`http://127.0.0.1:${port}${path}`, { headers: { 'X-API-Key': KEY.basic } }),
      };
    };
    const first = await serve();
    for (let i = 0; i < 3; i++) expect((await first.get('/v1/assets/BTC/risk')).status).toBe(200);
    first.child.kill('SIGTERM');
    await new Promise((r) => first.child.on('exit', r));
    // The access log: one JSON line per request, with a short credential id and never the key.
    const lines = first
      .log()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .filter((l) => l.msg === 'request');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatchObject({
      method: 'GET',
      path: '/v1/assets/BTC/risk',
      route: 'risk',
      status: 200,
      plan: 'basic',
      credential: expect.stringMatching(/^key:[0-9a-f]{8}$/),
      code: null,
    });
    expect(lines[0].bytes).toBeGreaterThan(1000);
    expect(typeof lines[0].ms).toBe('number');
    expect(Number.isFinite(Date.parse(lines[0].time))).toBe(true);
    expect(first.log()).not.toContain(KEY.basic);
    const second = await serve();
    try {
      expect((await second.get('/v1/assets/BTC/risk')).status).toBe(200);
      expect((await second.get('/v1/assets/BTC/risk')).status).toBe(200);
      expect((await second.get('/v1/assets/BTC/risk')).status).toBe(429);
    } finally {
      second.child.kill('SIGTERM');
    }
  });
});

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

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
      expect(await until(async () => (await get(KEY.pro)).status === 401, 2_000, 100)).toBe(true);
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
      writeFileSync(keys, '{"keys": [{"sha256": "nothex"');
      await until(() => logs.length, 2_000, 50);
      expect(logs).toHaveLength(1);
      expect(logs[0]).toMatch(/^keys: .*malformed-keys\.json: cannot read the key store \(.+\); keeping the previous \d+ keys$/);
      expect(logs[0]).toContain(`keeping the previous ${before!.size} keys`);
      expect(live.current()).toBe(before);
    } finally {
      live.close();
    }
  });
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
          quotas: await open(() => new RedisQuotaStore(REDIS_URL, shared)),
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
      expect(back[0]).toMatch(/^quotas: the shared store is back; (\d+) request\(s\) counted in this process meanwhile are charged to it$/);
      expect(Number(/; (\d+) request/.exec(back[0]!)![1])).toBeGreaterThanOrEqual(7);
    } finally {
      client.disconnect();
      redis.kill('SIGKILL');
    }
  });

  it('Redis stopped mid-run: the shim answers from its fallback, never 5xx, and logs it once', async () => {
    const port = await freePort();
    const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      stdio: 'ignore',
    });
    try {
      const url = `redis://127.0.0.1:${port}`;
      await until(async () => !(await redisAnswers(url)), 5_000, 100);
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
