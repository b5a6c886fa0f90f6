/**
 * The Redis quota store (decision 21): counts shared by a fleet. One atomic round trip per charge; what a fallback
 * counted while Redis could not be reached is recorded when it answers again.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import {
  MINUTE_MS,
  MONTHS_KEPT,
  monthsAfter,
  type Admission,
  type Charge,
  type Limits,
  type MonthUse,
  type MonthWindow,
  type QuotaStore,
} from '../quota.js';

/** How long a month's counter lives in Redis: until its month is more than MONTHS_KEPT months back, and a day more. */
export const keepMs = (month: MonthWindow, now: number): number => keptUntil(month.start) - now + 86_400_000;

/** The month MONTHS_KEPT + 1 after the one starting at `start`; the last one asked is kept, as every charge asks it. */
let kept = { start: NaN, until: NaN };
function keptUntil(start: number): number {
  if (kept.start !== start) kept = { start, until: monthsAfter(start, MONTHS_KEPT + 1) };
  return kept.until;
}

const USES: Record<MonthUse, number> = { request: 0, minute: 1, revalidation: 2 };

/** This process among the instances sharing Redis: random once, so members of one sorted set never collide. */
const INSTANCE = randomBytes(6).toString('hex');
let sequence = 0;
/** A request's member in the minute's sorted set: its time, then an id no other request of any instance has. */
const member = (now: number) => `${now}:${INSTANCE}${(sequence++).toString(36)}`;

/**
 * One atomic round trip per charge: the sliding minute is a sorted set of admitted times, the month a counter kept
 * for MONTHS_KEPT months after it (the billing read). Same rule as `admit`: a refused request is counted nowhere.
 * Times are the shim's clock; expiries are relative, so a clock that differs from Redis's changes nothing.
 */
const TAKE = `
local now, perMinute, perMonth, monthEnd, use, keep = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[6]), tonumber(ARGV[7])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - ${MINUTE_MS})
local n = redis.call('ZCARD', KEYS[1])
local function resetMs()
  local o = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  if o[2] then return tonumber(o[2]) + ${MINUTE_MS} - now end
  return 0
end
local m = tonumber(redis.call('GET', KEYS[2]) or '0')
if n >= perMinute then local r = resetMs(); return {0, 1, 0, r, r, math.max(0, perMonth - m), n, m, 0} end
local spent = m >= perMonth
if spent and use == 0 then return {0, 2, perMinute - n, resetMs(), monthEnd - now, 0, n, m, 0} end
redis.call('ZADD', KEYS[1], now, ARGV[5])
redis.call('PEXPIRE', KEYS[1], ${MINUTE_MS})
local charged = 0
if use == 0 or (use == 2 and not spent) then
  m = redis.call('INCR', KEYS[2])
  redis.call('PEXPIRE', KEYS[2], keep)
  charged = 1
end
return {1, 0, perMinute - n - 1, resetMs(), 0, math.max(0, perMonth - m), n + 1, m, charged}
`;

type TakeReply = [number, number, number, number, number, number, number, number, number];

function admission([ok, code, remaining, resetMs, retryMs, monthRemaining, minuteUsed, monthUsed, charged]: TakeReply): Admission {
  const refused = code === 1 ? 'rate_limited' : code === 2 ? 'quota_exceeded' : undefined;
  return { ok: ok === 1, code: refused, remaining, resetMs, retryMs, monthRemaining, minuteUsed, monthUsed, monthCharged: charged === 1 };
}

/** A month's charge returned (a 304): never below zero. */
const REFUND = `
local m = tonumber(redis.call('GET', KEYS[1]) or '0')
if m > 0 then redis.call('DECR', KEYS[1]) end
return m
`;

/** What a fallback counted meanwhile, recorded without a check: into the minute (a later take drops it once old) and the month. */
const RECORD = `
if ARGV[4] == 'refund' then
  local m = tonumber(redis.call('GET', KEYS[2]) or '0')
  if m > 0 then redis.call('DECR', KEYS[2]) end
  return 1
end
redis.call('ZADD', KEYS[1], tonumber(ARGV[1]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], ${MINUTE_MS})
if ARGV[4] == 'request' then
  redis.call('INCR', KEYS[2])
  redis.call('PEXPIRE', KEYS[2], math.max(tonumber(ARGV[2]), 1))
end
return 1
`;

/** The Redis keys of a credential's minute and of its month (the billing read finds months by this name). */
export const redisKeys = (prefix: string, credential: string, month: MonthWindow) =>
  [`${prefix}${credential}:minute`, `${prefix}${credential}:month:${month.start}`] as const;
export const DEFAULT_REDIS_PREFIX = 'rr:q:';

/**
 * Commands waiting on Redis, each rejected when no answer came within `ms`. One timer serves them all (a timer per
 * command would cost each request a share of the rate), armed for the oldest waiting; commands are sent in order
 * on one connection, so deadlines come in the order they were set. Time is counted only while this process could
 * have read an answer: when the timer fires, the answer may already wait on the socket behind a busy event loop,
 * so the verdict waits for the loop's poll of the sockets (a setImmediate runs after it). A loaded machine then
 * falls back only on a late Redis, never on its own stall.
 */
class AnswerDeadlines {
  private waiting: { by: number; settled: boolean; reject: (e: Error) => void }[] = [];
  private head = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly ms: number) {}

  within<T>(p: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const w = { by: performance.now() + this.ms, settled: false, reject };
      this.waiting.push(w);
      this.timer ??= setTimeout(() => setImmediate(() => this.expire()), this.ms);
      p.then(
        (v) => {
          if (w.settled) return;
          w.settled = true;
          resolve(v);
        },
        (e: unknown) => {
          if (w.settled) return;
          w.settled = true;
          reject(e as Error);
        },
      );
    });
  }

  /** Rejects every command past its deadline, then waits for the oldest still waiting, if any. */
  private expire(): void {
    this.timer = undefined;
    const now = performance.now();
    const q = this.waiting;
    while (this.head < q.length && (q[this.head]!.settled || q[this.head]!.by <= now)) {
      const w = q[this.head++]!;
      if (w.settled) continue;
      w.settled = true;
      w.reject(new Error(`Redis did not answer within ${this.ms} ms`));
    }
    // Under steady load something is always waiting: the settled are cut off the front as they pile up.
    if (this.head === q.length || this.head > 1024) [this.waiting, this.head] = [q.slice(this.head), 0];
    // The oldest still waiting is at `head`, not at the front (the settled before it may not be cut off yet); its
    // deadline is ahead of now, so the timer is never armed in the past, to fire at once and again.
    const oldest = this.waiting[this.head];
    if (oldest) this.timer = setTimeout(() => setImmediate(() => this.expire()), oldest.by - now);
  }
}

export interface RedisOptions {
  /** How long a charge waits for Redis before the fallback answers (default 500 ms). */
  timeoutMs?: number;
}

export class RedisQuotaStore implements QuotaStore {
  readonly redis: Redis;
  private readonly deadlines: AnswerDeadlines;
  /** The first connection: requests wait for it (or for it to fail) so the first requests after a start are counted too. */
  private connected: Promise<void>;

  /** `prefix` namespaces the keys (several deployments, or tests, on one Redis). */
  constructor(
    url: string,
    readonly prefix = DEFAULT_REDIS_PREFIX,
    { timeoutMs = 500 }: RedisOptions = {},
  ) {
    this.deadlines = new AnswerDeadlines(timeoutMs);
    // Fail fast while Redis is away (no queueing): the fallback answers instead. ioredis's own command timeout is
    // only the backstop that clears commands a hung Redis never answers; `AnswerDeadlines` is the wait that counts.
    this.redis = new Redis(url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: Math.max(10_000, timeoutMs * 4),
      connectTimeout: 1_000,
      lazyConnect: false,
    });
    this.redis.on('error', () => {}); // reported through the failing commands, once a minute
    this.redis.defineCommand('rrTake', { numberOfKeys: 2, lua: TAKE });
    this.redis.defineCommand('rrRefund', { numberOfKeys: 1, lua: REFUND });
    this.redis.defineCommand('rrRecord', { numberOfKeys: 2, lua: RECORD });
    this.connected = new Promise<void>((resolve) => {
      const done = () => {
        this.redis.off('ready', done);
        this.redis.off('error', done);
        this.redis.off('end', done);
        resolve();
      };
      this.redis.on('ready', done);
      this.redis.on('error', done);
      this.redis.on('end', done);
    });
  }

  private command<T>(name: string, ...args: (string | number)[]): Promise<T> {
    const run = (this.redis as unknown as Record<string, (...a: (string | number)[]) => Promise<T>>)[name]!;
    return this.deadlines.within(run.apply(this.redis, args));
  }

  take(credential: string, limits: Limits, now: number, month: MonthWindow, use: MonthUse = 'request'): Promise<Admission> {
    const send = () =>
      this.command<TakeReply>(
        'rrTake',
        ...redisKeys(this.prefix, credential, month),
        now,
        limits.perMinute,
        limits.perMonth,
        month.end,
        member(now),
        USES[use],
        keepMs(month, now),
      ).then(admission);
    return this.redis.status === 'ready' ? send() : this.connected.then(send);
  }

  async refund(credential: string, month: MonthWindow): Promise<void> {
    await this.command('rrRefund', redisKeys(this.prefix, credential, month)[1]);
  }

  async record(charges: Charge[]): Promise<void> {
    for (let i = 0; i < charges.length; i += 1_000) {
      const pipeline = this.redis.pipeline() as unknown as { rrRecord: (...a: (string | number)[]) => void; exec: Redis['exec'] };
      for (const c of charges.slice(i, i + 1_000))
        pipeline.rrRecord(
          ...redisKeys(this.prefix, c.credential, c.month),
          c.now,
          keepMs(c.month, c.now || Date.now()),
          member(c.now),
          c.kind,
        );
      const results = await pipeline.exec();
      const failed = results?.find(([e]) => e);
      if (!results || failed) throw failed?.[0] ?? new Error('the pipeline did not run');
    }
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
