/**
 * The Redis webhook store (decision 108): the suite every webhook store passes, then what a fleet needs of it —
 * two instances on one Redis share endpoints, the owner's limit and the claims — the key layout an operator reads
 * with redis-cli, and a list of many endpoints in two round trips. Tests use REDIS_URL (default
 * redis://127.0.0.1:6379), each under a key prefix of its own removed when the file ends; where no Redis answers
 * they are skipped with the reason, except under CI=true.
 */
import { Redis } from 'ioredis';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { RedisWebhookStore } from '../../../auth-shim/node/webhooks-redis.js';
import { WEBHOOK_ATTEMPTS_KEPT } from '../../../generator/contract/webhooks.js';
import { closedAtEnd, privateRedis, redisAway, redisPrefixes, REDIS_URL } from '../../services.js';
import { describeWebhookStore, endpoint } from '../webhooks/store-suite.js';

const noRedis = await redisAway('the Redis webhook store tests');

/** A key namespace of its own on the shared Redis, removed when the file ends. */
const prefix = redisPrefixes(noRedis);
const open = closedAtEnd<RedisWebhookStore>();

describe.skipIf(noRedis !== null)(`Redis webhook store (skipped: ${noRedis ?? 'Redis answers'})`, () => {
  describeWebhookStore('Redis', async () => {
    const store = new RedisWebhookStore(REDIS_URL, prefix());
    return { store, close: () => store.close() };
  });

  it('closes at once on a Redis that has stopped answering: serve closes it once nothing of its own waits on Redis', async () => {
    const { url, redis } = await privateRedis();
    try {
      const store = new RedisWebhookStore(url, prefix());
      await store.list(); // connected
      redis.kill('SIGSTOP');
      // No timer runs, so nothing but the close itself can end the wait (before: QUIT, answered after 5 s by its timeout).
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      let closed = false;
      void store.close().then(() => (closed = true));
      // Turns of the event loop, not time: a slow machine gives as many.
      for (let turn = 0; turn < 100 && !closed; turn++) await new Promise((r) => setImmediate(r));
      expect(closed).toBe(true);
    } finally {
      vi.useRealTimers();
      redis.kill('SIGCONT');
      redis.kill('SIGKILL');
    }
  });

  it('shares endpoints, the owner’s limit and the claims between the instances of a fleet', async () => {
    const shared = prefix();
    const [one, two] = await Promise.all([0, 1].map(() => open(() => new RedisWebhookStore(REDIS_URL, shared))));
    const added = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? one : two)!.add(endpoint('label:a'), 5)));
    expect(added.filter(Boolean)).toHaveLength(5);
    const [first] = await two!.list('label:a');
    expect(await one!.list()).toEqual(await two!.list());

    expect(await one!.claim(first!.id, 'one', 60_000, 0)).toBe(true);
    expect(await two!.claim(first!.id, 'two', 60_000, 0)).toBe(false);
    await two!.release(first!.id, 'two');
    expect(await one!.claim(first!.id, 'one', 60_000, 0)).toBe(true);
    await one!.release(first!.id, 'one');
    expect(await two!.claim(first!.id, 'two', 60_000, 0)).toBe(true);

    await one!.set(first!.id, { delivered_through: 9 });
    expect((await two!.get(first!.id))?.delivered_through).toBe(9);
  });

  it('keeps the layout its top comment gives, and removes every key of an endpoint with it', async () => {
    const p = prefix();
    const s = await open(() => new RedisWebhookStore(REDIS_URL, p));
    const r = new Redis(REDIS_URL);
    onTestFinished(() => r.disconnect());
    const e = endpoint('label:a');
    await s.add(e, 5);
    for (let i = 0; i < WEBHOOK_ATTEMPTS_KEPT + 3; i++) {
      await s.logAttempt(e.id, { message_id: `m${i}`, attempt: i, at: '2026-01-01T00:00:00.000Z', status: 200, error: null, ms: 5 });
    }
    await s.claim(e.id, 'holder', 60_000, 0);

    expect(await r.hget(`${p}wh:ep:${e.id}`, 'url')).toBe(JSON.stringify(e.url));
    expect(await r.hget(`${p}wh:ep:${e.id}`, 'pending')).toBe('null');
    expect(await r.smembers(`${p}wh:owner:label:a`)).toEqual([e.id]);
    expect(await r.smembers(`${p}wh:all`)).toEqual([e.id]);
    expect(await r.llen(`${p}wh:attempts:${e.id}`)).toBe(WEBHOOK_ATTEMPTS_KEPT);
    expect(JSON.parse((await r.lindex(`${p}wh:attempts:${e.id}`, 0))!)).toMatchObject({ message_id: `m${WEBHOOK_ATTEMPTS_KEPT + 2}` });
    expect(await r.get(`${p}wh:claim:${e.id}`)).toBe('holder');

    // A set after the remove must not bring back part of the hash; an attempt ending after it leaves no list.
    expect(await s.remove(e.id)).toBe(true);
    expect(await s.set(e.id, { pending: null })).toBe(false);
    await s.logAttempt(e.id, { message_id: 'late', attempt: 1, at: '2026-01-01T00:00:00.000Z', status: null, error: 'x', ms: 1 });
    // Only the claim is left, to lapse by itself.
    expect(await r.keys(`${p}*`)).toEqual([`${p}wh:claim:${e.id}`]);
  });

  it('lists a thousand endpoints in two round trips: their ids, then one pipeline', async () => {
    const s = await open(() => new RedisWebhookStore(REDIS_URL, prefix()));
    const owners = ['label:a', 'label:b', 'marketplace:c', 'key:d'];
    await Promise.all(
      Array.from({ length: 1_000 }, (_, i) =>
        s.add(endpoint(owners[i % 4]!, new Date(Date.UTC(2026, 0, 1) + ((i * 7919) % 1_000) * 1_000).toISOString()), 1_000),
      ),
    );
    // Round trips counted as writes to Redis's socket, not timed: a busy machine makes them slower, not more.
    const writes = vi.spyOn(s.redis.stream, 'write');
    const all = await s.list();
    expect(writes).toHaveBeenCalledTimes(2); // SMEMBERS, then one pipeline of the 1,000 HGETALL
    writes.mockRestore();
    expect(all).toHaveLength(1_000);
    expect(all.map((e) => e.created_at)).toEqual(all.map((e) => e.created_at).sort());
    expect((await s.list('label:b')).every((e) => e.owner === 'label:b')).toBe(true);
  });

  it('waits for Redis to connect rather than fail the first commands', async () => {
    const s = await open(() => new RedisWebhookStore(REDIS_URL, prefix()));
    expect(s.redis.status).not.toBe('ready');
    expect(await s.add(endpoint('label:a'), 1)).toBe(true);
  });
});
