/**
 * The Redis store (decision 21): a fleet shares its counts, and a Redis that stops, stalls or drops its connection
 * never takes the API down nor bills a request twice. Tests use REDIS_URL (default redis://127.0.0.1:6379) and
 * private redis-server processes; where none answers they are skipped with the reason, except under CI=true.
 */
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import { createHandler } from '../../../auth-shim/handler.js';
import { FileOrigin } from '../../../auth-shim/node/file-origin.js';
import { DEFAULT_REDIS_PREFIX, keepMs, redisKeys, RedisQuotaStore, redisWithFallback } from '../../../auth-shim/node/quota-redis.js';
import { loadKeys, startServer } from '../../../auth-shim/node/server.js';
import {
  FallbackQuotaStore,
  monthOf,
  UnrecordedCharges,
  type Admission,
  type MonthUse,
  type QuotaStore,
} from '../../../auth-shim/quota.js';
import { PLAN_LIMITS } from '../../../generator/contract/plans.js';
import { tempDir, until } from '../../helpers.js';
import { privateRedis, redisAway, redisPrefixes, closedAtEnd, REDIS_URL } from '../../services.js';
import { minuteClock, type Call } from '../suite.js';
import { KEY, KEYS_FILE, builtTree } from '../tree.js';
import { load, manyKeys, serve, stopped } from './serve-load.js';
import { monthTotals } from '../../../auth-shim/node/quota-totals.js';

const noRedis = await redisAway('the Redis quota tests');

/** A key namespace of its own on the shared Redis, removed when the file ends. */
const prefix = redisPrefixes(noRedis);
const open = closedAtEnd<QuotaStore>();

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
    const started = await privateRedis();
    const url = started.url;
    let redis = started.redis;
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false });
    client.on('error', () => {});
    try {
      const logs: string[] = [];
      const ns = prefix();
      // A generous wait: here only the outage fails a charge, never a slow answer (which would be another outage).
      const store = (await open(
        () => new FallbackQuotaStore(new RedisQuotaStore(url, ns, { timeoutMs: 10_000 }), (m) => logs.push(m)),
      )) as FallbackQuotaStore;
      const limits = { perMinute: 1_000, perMonth: 100_000 };
      const t = Date.now();
      redis.kill('SIGKILL');
      await new Promise((r) => redis.on('exit', r));
      for (let i = 0; i < 7; i++) expect((await store.take('k', limits, t + i, monthOf(t))).ok).toBe(true);
      ({ redis } = await privateRedis(Number(new URL(url).port)));
      // The shared store answers again (its client reconnects): the first request it takes charges what was owed.
      let waited = 0;
      await until(
        async () => (
          await store.take('k', limits, t + 100 + waited++, monthOf(t)),
          logs.some((l) => l.includes('the shared store is back'))
        ),
        60_000,
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
      // Each instance's watermark outlives every counter it guards, so a file of its charges recorded again, however
      // late, is still skipped.
      const [watermark] = await client.keys(`${ns}applied:*`);
      expect(await client.pttl(watermark!)).toBeGreaterThan(keepMs(monthOf(Date.now()), Date.now()));
    } finally {
      client.disconnect();
      redis.kill('SIGKILL');
    }
  });

  it('a stop during an outage keeps what it owes beside the tree; the next start records each charge once', async () => {
    const { url, redis } = await privateRedis();
    const dir = tempDir('rr-owed-');
    const logs: string[] = [];
    const limits = { perMinute: 1_000, perMonth: 100_000 };
    const t = Date.now();
    const m = monthOf(t);
    const counted = async () => {
      const client = new Redis(url);
      const n = Number(await client.get(redisKeys(DEFAULT_REDIS_PREFIX, 'k', m)[1]));
      client.disconnect();
      return n;
    };
    try {
      const first = redisWithFallback(url, (l) => logs.push(l), dir);
      expect((await first.take('k', limits, t, m)).ok).toBe(true);
      redis.kill('SIGSTOP');
      // The first waits out its deadline (Redis may run it when it wakes), the rest are counted here at once.
      for (let i = 1; i <= 5; i++) expect((await first.take('k', limits, t + i, m)).ok).toBe(true);
      // A 304 meanwhile: charged, and its charge returned.
      const revalidated = await first.take('k', limits, t + 10, m, 'revalidation');
      await first.refund('k', m, revalidated);
      const stopped = await first.close().catch((e: unknown) => e);
      expect(stopped).toBeInstanceOf(UnrecordedCharges);
      const kept = (stopped as Error).message.match(
        /could not be recorded in 5 s; they are kept in (\S+\.jsonl), which the next start/,
      )?.[1];
      expect(statSync(kept!).mode & 0o777).toBe(0o600); // credentials: as private as the quota database
      const copy = readFileSync(kept!);
      redis.kill('SIGCONT');
      // The next start owes them from the start and records them; the file goes once they are in.
      const second = redisWithFallback(url, (l) => logs.push(l), dir);
      // Recorded with no request to prompt it (an idle server).
      expect(await until(async () => !existsSync(kept!), 60_000, 50)).toBe(true);
      await second.close();
      expect(logs.join('\n')).toMatch(/owed to Redis: 7 charges an instance before this one \(stopped or killed\) could not record, from /);
      expect(await counted()).toBe(6);
      // A crash before the file went: the same charges again change nothing.
      writeFileSync(kept!, copy);
      const again: string[] = [];
      await redisWithFallback(url, (l) => again.push(l), dir).close();
      expect(again.join('\n')).toMatch(
        /back; 7 charge\(s\) an instance before this one could not record are recorded in it; 7 of them it had already \(sent before and run late, or recorded before\): skipped, not counted twice/,
      );
      expect(existsSync(kept!)).toBe(false);
      expect(await counted()).toBe(6);
    } finally {
      redis.kill('SIGCONT');
      redis.kill('SIGKILL');
    }
  });

  it('an owed file whose last line a full disk cut short is recorded without it, said; a line that is not charges is refused', async () => {
    const dir = tempDir('rr-owed-cut-');
    const space = prefix();
    const m = monthOf(Date.now());
    const charge = (seq: number) => ({ credential: 'cut', now: Date.now(), month: m, kind: 'request', seq, client: 'c0ffee' });
    // Left by an instance no longer running (a pid that has exited).
    const file = join(dir, `.risk-readings-quotas.owed-${spawnSync('true').pid}-2026-12-01T00-00-00-000Z.jsonl`);
    writeFileSync(file, `${JSON.stringify([charge(1), charge(2)])}\n${JSON.stringify([charge(3)])}\n[{"credential":"cu`);
    // One whole but for its newline (written by hand) is read whole; one of a process that runs is left to it, said.
    const byHand = file.replace('00-000Z', '01-000Z');
    writeFileSync(byHand, JSON.stringify([charge(5)]));
    const running = join(dir, `.risk-readings-quotas.owed-${process.ppid}-2026-12-01T00-00-00-000Z.jsonl`);
    writeFileSync(running, `${JSON.stringify([charge(6)])}\n`);
    const logs: string[] = [];
    const store = redisWithFallback(REDIS_URL, (l) => logs.push(l), dir, space);
    expect(await until(() => !existsSync(file) && !existsSync(byHand), 60_000, 20)).toBe(true);
    await store.close();
    expect(logs.join('\n')).toMatch(new RegExp(`${file}: its last line was cut short; the 18 bytes of it are dropped`));
    expect(logs.join('\n')).toMatch(new RegExp(`${running} is left to process ${process.ppid}, which runs`));
    expect((await monthTotals(REDIS_URL, m, space)).get('cut')).toBe(4);
    rmSync(running);
    writeFileSync(file, `${JSON.stringify([charge(4)])}\n{"not": "charges"}\n`);
    expect(() => redisWithFallback(REDIS_URL, () => {}, dir, space)).toThrow(
      new RegExp(`^${file}: not the charges a stop kept \\(line 2: the line: Invalid input.*\\); delete that line to record the others`),
    );
  });

  it('an owed file another serve over the tree left when it ended is taken in while this one runs', async () => {
    const dir = tempDir('rr-owed-adopt-');
    const space = prefix();
    const m = monthOf(Date.now());
    const logs: string[] = [];
    const store = redisWithFallback(REDIS_URL, (l) => logs.push(l), dir, space);
    try {
      // A rolling restart during an outage: the old serve kept what it owed, then ended (a pid that has exited).
      const file = join(dir, `.risk-readings-quotas.owed-${spawnSync('true').pid}-2026-12-01T00-00-00-000Z.jsonl`);
      const charge = { credential: 'left', now: Date.now(), month: m, kind: 'request', seq: 1, client: 'beef01' };
      writeFileSync(file, `${JSON.stringify([charge])}\n`);
      expect(await until(() => !existsSync(file), 60_000, 50)).toBe(true); // asked for every 10 s
      expect(await until(async () => (await monthTotals(REDIS_URL, m, space)).get('left') === 1, 10_000, 50)).toBe(true);
      expect(logs.join('\n')).toMatch(new RegExp(`owed to Redis: 1 charge a serve that ended could not record, from ${file}`));
    } finally {
      await store.close();
    }
  });

  it('an owed file removed during the outage is written whole again at the next keep; the stop keeps every charge', async () => {
    const { url, redis } = await privateRedis();
    const dir = tempDir('rr-owed-gone-');
    const limits = { perMinute: 1_000, perMonth: 100_000 };
    const t = Date.now();
    const m = monthOf(t);
    const owedFiles = () => readdirSync(dir).filter((n) => n.includes('.owed-'));
    try {
      const store = redisWithFallback(url, () => {}, dir);
      expect((await store.take('k', limits, t, m)).ok).toBe(true);
      redis.kill('SIGSTOP');
      for (let i = 1; i <= 5; i++) await store.take('k', limits, t + i, m);
      expect(await until(() => owedFiles().length === 1, 10_000, 20)).toBe(true);
      const file = join(dir, owedFiles()[0]!);
      rmSync(file); // an operator's clean-up while serve runs
      for (let i = 6; i <= 8; i++) await store.take('k', limits, t + i, m);
      expect(await until(() => existsSync(file), 10_000, 20)).toBe(true);
      const stop = await store.close().catch((e: unknown) => e);
      expect(stop).toBeInstanceOf(UnrecordedCharges);
      const kept = readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .flatMap((line) => JSON.parse(line) as unknown[]);
      expect(kept).toHaveLength(8);
      expect((stop as Error).message).toMatch(/^8 charges counted while/);
    } finally {
      redis.kill('SIGCONT');
      redis.kill('SIGKILL');
    }
  });

  it('kill -9 during an outage loses at most the last second of what was owed; the next start records it once', async () => {
    const { url, redis } = await privateRedis();
    // A tree of its own: the charges owed are kept beside it.
    const tree = tempDir('rr-owed-kill-');
    cpSync(out, tree, { recursive: true });
    const { file: keysFile, keys } = manyKeys(50, tree);
    const total = async () => [...(await monthTotals(url, monthOf(Date.now()))).values()].reduce((a, b) => a + b, 0);
    let server: Awaited<ReturnType<typeof serve>> | undefined;
    try {
      server = await serve(['--public', tree, '--keys', keysFile, '--quotas', url, '--log-level', 'silent']);
      const l = load(server.url, keys);
      await until(() => l.admitted.length >= 50, 60_000, 20);
      redis.kill('SIGSTOP');
      // Well past the bound below, so that a stop that kept nothing fails: 4 s of answers from the fallback.
      const outage = Date.now();
      await until(() => Date.now() - outage >= 4_000 && l.admitted.filter((t) => t > outage).length >= 100, 60_000, 20);
      const owedFiles = () => readdirSync(tree).filter((n) => n.startsWith('.risk-readings-quotas.owed-'));
      // Another instance started over the tree meanwhile (a rolling restart) leaves a live instance's file alone.
      const logs: string[] = [];
      const beside = redisWithFallback(url, (m) => logs.push(m), tree);
      await beside.close();
      expect(logs.join('\n')).not.toMatch(/owed to it/);
      expect(owedFiles()).toEqual([expect.stringContaining(`.owed-${server.child.pid}-`)]);
      // Appended each second, not written again whole: what was kept stays as it was.
      const kept = () => readFileSync(join(tree, owedFiles()[0]!), 'utf8');
      const before = kept();
      expect(await until(() => kept().length > before.length, 60_000, 20)).toBe(true);
      expect(kept().startsWith(before)).toBe(true);
      const killedAt = Date.now();
      await stopped(server.child, 'SIGKILL');
      await l.stop();
      redis.kill('SIGCONT');
      expect(owedFiles()).toHaveLength(1);
      // The next start records what the file holds, and removes it.
      const next = redisWithFallback(url, () => {}, tree);
      expect(await until(() => owedFiles().length === 0, 60_000, 50)).toBe(true);
      await next.close();
      const counted = await total();
      // Kept once a second (and a keep is a write of its own): at most what came in the last three seconds is lost.
      const bound = l.admitted.filter((t) => t > killedAt - 3_000).length;
      expect(counted).toBeLessThanOrEqual(l.admitted.length);
      expect(l.admitted.length - counted).toBeLessThanOrEqual(bound);
      console.log(`kill -9 during an outage: ${l.admitted.length} admitted, ${counted} counted (allowed loss ${bound})`);
    } finally {
      server?.child.kill('SIGKILL'); // a failed assertion leaves no serve behind
      redis.kill('SIGCONT');
      redis.kill('SIGKILL');
    }
  });

  it('Redis that stops answering (paused): each charge waits its own timeout, then the fallback answers, never 5xx', async () => {
    const { url, redis } = await privateRedis();
    // Long enough that a running Redis on a busy machine always answers within it, and that the second charge is
    // sent while the first still waits, however late this test's own timer.
    const timeoutMs = 2_000;
    try {
      const logs: string[] = [];
      const store = await open(() => new FallbackQuotaStore(new RedisQuotaStore(url, prefix(), { timeoutMs }), (m) => logs.push(m)));
      const handle = createHandler({ origin: FileOrigin.open(out, 0), keys: loadKeys(KEYS_FILE), quotas: store, now: minuteClock() });
      const limits = { perMinute: 1_000, perMonth: 100_000 };
      const t = Date.now();
      expect((await store.take('k', limits, t, monthOf(t))).ok).toBe(true);
      redis.kill('SIGSTOP');
      // Two charges 150 ms apart while Redis hangs: each is answered by the fallback, neither before its own timeout.
      const started = performance.now();
      const answeredAt = (p: Admission | Promise<Admission>) =>
        Promise.resolve(p).then((a) => ({ ok: a.ok, ms: performance.now() - started }));
      let firstAnswered = false;
      const first = answeredAt(store.take('k', limits, t + 1, monthOf(t))).finally(() => (firstAnswered = true));
      // A request beside it waits as long, and is answered as if Redis had answered.
      const request = handle(new Request('http://shim.test/v1/assets/BTC/risk', { headers: { 'X-API-Key': KEY.pro } })).then((r) => ({
        status: r.status,
        ms: performance.now() - started,
      }));
      await new Promise((r) => setTimeout(r, 150));
      expect(firstAnswered, 'the second charge is sent while the first waits').toBe(false);
      const sent = performance.now() - started;
      const second = answeredAt(store.take('k', limits, t + 2, monthOf(t)));
      const [a, b, c] = await Promise.all([first, second, request]);
      expect(a.ok && b.ok).toBe(true);
      expect(a.ms).toBeGreaterThanOrEqual(timeoutMs - 5);
      expect(b.ms - sent).toBeGreaterThanOrEqual(timeoutMs - 5);
      expect(b.ms).toBeGreaterThan(a.ms);
      expect(c.status).toBe(200);
      expect(c.ms).toBeGreaterThanOrEqual(timeoutMs - 5);
      expect(logs).toHaveLength(1);
      expect(logs[0]).toContain(`Redis did not answer within ${timeoutMs} ms`);
    } finally {
      redis.kill('SIGCONT');
      redis.kill('SIGKILL');
    }
  });

  it('Redis that stalls past the deadline with charges in flight, again and again: each admitted request counted once', async () => {
    const { url, redis } = await privateRedis();
    const logs: string[] = [];
    // A short wait and quick retries: charges time out in flight, and their records queue behind them in the stall.
    const store = await open(
      () => new FallbackQuotaStore(new RedisQuotaStore(url, 'rr:stall:', { timeoutMs: 100 }), (m) => logs.push(m), { retryMs: 50 }),
    );
    try {
      const run = charging(store);
      for (let stall = 0; stall < 4; stall++) {
        // Charges go to Redis again (nothing owed), and keep going when it stops.
        await whenever(() => owing(store) === 0);
        await run.after(300);
        redis.kill('SIGSTOP');
        // Asleep until the charges in flight time out and are owed, then while more are counted here and sent as records.
        await whenever(() => owing(store) > 0);
        await run.after(1_500);
        redis.kill('SIGCONT');
      }
      await run.stop();
      await settle(store, run);
      expect(await counted(url, 'rr:stall:', run.month)).toEqual(run.expected());
      expect(logs.filter((l) => l.includes('the shared store is back')).length).toBeGreaterThanOrEqual(1);
    } finally {
      redis.kill('SIGCONT');
      redis.kill('SIGKILL');
    }
  });

  it('connections dropped under load at random points, again and again: each admitted request counted once', async () => {
    const { url: direct, redis } = await privateRedis();
    const proxy = await droppingProxy(Number(new URL(direct).port));
    const logs: string[] = [];
    // A generous wait: here only the drops fail a charge, never a slow answer.
    const store = await open(
      () => new FallbackQuotaStore(new RedisQuotaStore(proxy.url, 'rr:drop:', { timeoutMs: 10_000 }), (m) => logs.push(m), { retryMs: 50 }),
    );
    try {
      const run = charging(store);
      for (let drop = 0; drop < 8; drop++) {
        // Every other drop once charges go to Redis again (takes and refunds in flight), the others while records may be.
        if (drop % 2 === 0) await whenever(() => owing(store) === 0);
        // A random point: after some thousands of bytes more have crossed the proxy, either way.
        const at = proxy.carried() + 2_000 + Math.floor(Math.random() * 20_000);
        await whenever(() => proxy.carried() >= at);
        proxy.drop();
      }
      await run.after(300);
      await run.stop();
      await settle(store, run);
      expect(await counted(direct, 'rr:drop:', run.month)).toEqual(run.expected());
      expect(logs.filter((l) => l.includes('the shared store is back')).length).toBeGreaterThanOrEqual(1);
    } finally {
      await proxy.close();
      redis.kill('SIGKILL');
    }
  });

  it('Redis stopped mid-run: the shim answers from its fallback, never 5xx, and logs it once', async () => {
    const { url, redis } = await privateRedis();
    try {
      const logs: string[] = [];
      // A generous wait: here only the stop fails a charge, never a slow answer.
      const store = await open(
        () => new FallbackQuotaStore(new RedisQuotaStore(url, prefix(), { timeoutMs: 10_000 }), (m) => logs.push(m)),
      );
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

  it('a Redis that comes back without the counts it held is said to have lost them; one merely paused is not', async () => {
    const first = await privateRedis();
    const url = first.url;
    let redis = first.redis;
    try {
      const logs: string[] = [];
      const store = await open(() => new RedisQuotaStore(url, prefix(), { log: (m) => logs.push(m) }));
      const t = Date.now();
      expect((await store.take('k', PLAN_LIMITS.pro, t, monthOf(t))).monthUsed).toBe(1);
      redis.kill('SIGSTOP'); // paused: what it holds stays
      await sleep(1_500);
      redis.kill('SIGCONT');
      expect(
        await until(
          async () => (await store.take('k', PLAN_LIMITS.pro, t + 1, monthOf(t)).catch(() => null))?.monthUsed === 2,
          30_000,
          100,
        ),
      ).toBe(true);
      expect(logs).toEqual([]);
      redis.kill('SIGKILL'); // restarted empty: no persistence
      await new Promise((r) => redis.on('exit', r));
      ({ redis } = await privateRedis(Number(new URL(url).port)));
      expect(await until(async () => logs.length > 0, 30_000, 100)).toBe(true);
      expect(logs).toEqual([expect.stringMatching(/^quotas: Redis came back without the counts it held .*run Redis with appendonly yes$/)]);
    } finally {
      redis.kill('SIGKILL');
    }
  });

  it("a recording Redis cannot take is said in the operator's words, not ioredis's option names", async () => {
    const { url, redis } = await privateRedis();
    const store = await open(() => new RedisQuotaStore(url, prefix()));
    const t = Date.now();
    await store.take('k', PLAN_LIMITS.pro, t, monthOf(t));
    redis.kill('SIGKILL');
    await new Promise((r) => redis.on('exit', r));
    const error = await store.record!([{ credential: 'k', now: t, month: monthOf(t), kind: 'request' }]).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/^the connection to Redis is down( \(.+\))?$/);
    expect((error as Error).message).not.toMatch(/enableOfflineQueue|maxRetriesPerRequest/);
  });

  it('a password Redis refuses is said as such, by serve and by usage, and never shown', async () => {
    const wrong = new URL(REDIS_URL);
    [wrong.username, wrong.password] = ['rr-nobody', 'not-the-password'];
    const store = await open(() => new RedisQuotaStore(wrong.href, prefix()));
    const t = Date.now();
    const refused = await Promise.resolve(store.take('k', PLAN_LIMITS.pro, t, monthOf(t))).catch((e: unknown) => e);
    expect((refused as Error).message).toMatch(/^the connection to Redis is down \(WRONGPASS /);
    const billed = await monthTotals(wrong.href, monthOf(t)).catch((e: unknown) => e);
    expect((billed as Error).message).toMatch(/: cannot read the quota counts \(WRONGPASS /);
    for (const said of [refused, billed]) expect((said as Error).message).not.toContain('not-the-password');
  });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Waits for `check`, however long a busy machine takes (the test's own timeout is the bound). */
async function whenever(check: () => boolean): Promise<void> {
  while (!check()) await sleep(5);
}
/** The charges a fallback owes its shared store. */
const owing = (store: FallbackQuotaStore) => (store as unknown as { owed: unknown[] }).owed.length;

const KEYS = ['a', 'b', 'c'];

/**
 * A stream of concurrent charges on a few keys until `stop`: requests, revalidations (half of those charged answered
 * 304, their charge returned) and usage reads, and what the shim told each caller. All at one time, so that none
 * leaves the minute however long a busy machine takes.
 */
function charging(store: QuotaStore) {
  const limits = { perMinute: 1_000_000, perMonth: 1_000_000_000 };
  const t = Date.now();
  const month = monthOf(t);
  const told = new Map(KEYS.map((k) => [k, { admitted: 0, charged: 0, refunded: 0 }]));
  let sent = 0;
  let stopped = false;
  const uses: MonthUse[] = ['request', 'request', 'revalidation', 'minute'];
  const one = async () => {
    const key = KEYS[sent++ % KEYS.length]!;
    const use = uses[Math.floor(Math.random() * uses.length)]!;
    const a = await store.take(key, limits, t, month, use);
    const n = told.get(key)!;
    if (!a.ok) throw new Error(`refused: ${a.code}`);
    n.admitted++;
    if (a.monthCharged) n.charged++;
    if (use === 'revalidation' && a.monthCharged && Math.random() < 0.5) {
      n.refunded++;
      await store.refund(key, month, a);
    }
  };
  // Each worker yields to timers between charges: a charge the fallback answers at once would otherwise never let go.
  const workers = Array.from({ length: 8 }, async () => {
    while (!stopped) {
      await one();
      await sleep(1);
    }
  });
  return {
    month,
    one,
    /** Resolves once `n` more charges have been sent. */
    after: (n: number) => {
      const at = sent + n;
      return whenever(() => sent >= at);
    },
    stop: async () => {
      stopped = true;
      await Promise.all(workers);
    },
    /** What Redis should hold: each key's month (charged less refunded) and its minute (every admitted request). */
    expected: () => Object.fromEntries([...told].map(([k, n]) => [k, { month: n.charged - n.refunded, minute: n.admitted }])),
  };
}

/** Charges one more each time until the fallback owes nothing (a charge is what makes it try the shared store). */
async function settle(store: FallbackQuotaStore, run: ReturnType<typeof charging>): Promise<void> {
  while (owing(store)) {
    await run.one();
    await store.settled();
    await sleep(60);
  }
}

/** Each key's month and minute as Redis holds them. */
async function counted(url: string, ns: string, month: { start: number }) {
  const r = new Redis(url, { maxRetriesPerRequest: 0 });
  try {
    const out: Record<string, { month: number; minute: number }> = {};
    for (const k of KEYS)
      out[k] = { month: Number(await r.get(`${ns}${k}:month:${month.start}`)), minute: await r.zcard(`${ns}${k}:minute`) };
    return out;
  } finally {
    r.disconnect();
  }
}

/** A TCP proxy in front of Redis on `port` that drops every connection it carries at once, as a network can. */
async function droppingProxy(port: number) {
  const sockets = new Set<Socket>();
  let carried = 0;
  const server = createServer((client) => {
    const upstream = connect(port, '127.0.0.1');
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      sockets.add(from);
      from.on('data', (d: Buffer) => (carried += d.length));
      from.pipe(to);
      from.on('error', () => {});
      from.on('close', () => {
        sockets.delete(from);
        to.destroy();
      });
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const drop = () => {
    for (const s of sockets) s.destroy();
  };
  return {
    url: `redis://127.0.0.1:${(server.address() as AddressInfo).port}`,
    carried: () => carried,
    drop,
    close: () => {
      drop();
      return new Promise((r) => server.close(r));
    },
  };
}
