/**
 * What the tests need of the machine: a free port, whether Redis answers (a skip CI may not take), and a Redis of a
 * test's own.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll } from 'vitest';
import { atEnd } from './at-end.js';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A port nothing listens on right now, on loopback. */
export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

/** Null when a Redis server answers at `url`, else why not. */
async function redisAnswers(url: string): Promise<string | null> {
  const r = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 10_000,
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

/**
 * Null when Redis answers at `REDIS_URL`, else why not, to name in the skipped suite's title. Under `CI=true` a Redis
 * that does not answer fails the run instead: CI must not pass by skipping `what`.
 */
export async function redisAway(what: string): Promise<string | null> {
  const away = await redisAnswers(REDIS_URL);
  if (away && process.env.CI === 'true') throw new Error(`CI=true and ${away}: ${what} cannot run`);
  return away;
}

/**
 * Key namespaces of a test file's own on the shared Redis (other engineers' tests use it too): each call gives a new
 * prefix, and every key under them is removed when the file ends (unless `away`, when no Redis answers).
 */
export function redisPrefixes(away: string | null): () => string {
  const prefixes: string[] = [];
  afterAll(async () => {
    if (away || !prefixes.length) return;
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
  return () => {
    const p = `rr:test:${randomBytes(6).toString('hex')}:`;
    prefixes.push(p);
    return p;
  };
}

/**
 * For a server that counts under the default prefix (as `serve` and `usage` do): the keys matching `pattern` in the
 * Redis at `url` that were not there now are removed when the test (or, called outside one, the file) ends.
 */
export async function removesAddedKeys(url: string, pattern = 'rr:q:*'): Promise<void> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  const before = new Set(await redis.keys(pattern));
  atEnd(async () => {
    const added = (await redis.keys(pattern)).filter((k) => !before.has(k));
    if (added.length) await redis.del(...added);
    redis.disconnect();
  });
}

/** Opens a store with `make` and closes it when the test file ends: `open(() => new SomeStore(...))`. */
export function closedAtEnd<S extends { close?(): Promise<void> }>(): <T extends S>(make: () => T | Promise<T>) => Promise<T> {
  const opened: S[] = [];
  afterAll(async () => {
    for (const s of opened) await s.close?.();
  });
  return async (make) => {
    const s = await make();
    opened.push(s);
    return s;
  };
}

/** A Redis of the test's own on a free port, answering: to pause or kill without touching the shared one. */
export async function privateRedis(port?: number): Promise<{ url: string; redis: ChildProcess }> {
  port ??= await freePort();
  const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  const url = `redis://127.0.0.1:${port}`;
  const end = Date.now() + 60_000;
  let away = await redisAnswers(url);
  while (away && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 100));
    away = await redisAnswers(url);
  }
  if (away) {
    redis.kill('SIGKILL');
    throw new Error(`the test's own redis-server at ${url} did not answer`);
  }
  return { url, redis };
}
