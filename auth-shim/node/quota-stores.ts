/**
 * The Node server's quota stores (decision 21): counts that survive a restart (a file on local disk, the
 * default) or are shared by a fleet (Redis), and the in-process fallback that keeps answering when a shared
 * store cannot be reached.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { Redis } from 'ioredis';
import { LockHeld, lockFile, type Lock } from '../../generator/output/lock.js';
import {
  FallbackQuotaStore,
  MemoryQuotaStore,
  MINUTE_MS,
  type Admission,
  type Charge,
  type Counts,
  type Limits,
  type MonthWindow,
  type QuotaStore,
} from '../quota.js';

/** Another process counts in this quota file (exit 3 from `serve`): names it and says what to use instead. */
export class QuotaFileHeld extends Error {}

/**
 * Counts held in memory and written to `file` at most once a second when they changed (write to a temporary
 * file, then rename over the old one, so a crash leaves the previous save whole): a restart loses at most the
 * last second. `close()` writes at once and lets go of the file; the CLI calls it on SIGTERM and SIGINT.
 *
 * One process counts in a file at a time: `open` takes `<file>.lock` (naming its holder) and waits, up to
 * `waitMs`, for a process still holding it, as in a rolling restart where the old server drains and saves its
 * counts before the new one loads them. Two processes counting in one file would each overwrite the other's.
 */
export class DiskQuotaStore extends MemoryQuotaStore {
  private dirty = false;
  private timer: ReturnType<typeof setInterval>;

  private constructor(
    readonly file: string,
    flushMs: number,
    private log: (m: string) => void,
    private readonly lock: Lock,
  ) {
    super();
    this.load();
    this.timer = setInterval(() => this.flush(), flushMs);
    this.timer.unref();
  }

  static async open(file: string, { flushMs = 1_000, log = () => {}, waitMs = 30_000 }: DiskOptions = {}): Promise<DiskQuotaStore> {
    const held = 'another process counts in this quota file';
    const deadline = Date.now() + waitMs;
    for (;;) {
      try {
        const lock = await lockFile(`${file}.lock`, `risk-readings serve (pid ${process.pid})`, held);
        return new DiskQuotaStore(file, flushMs, log, lock);
      } catch (e) {
        if (!(e instanceof LockHeld)) throw e;
        if (Date.now() >= deadline)
          throw new QuotaFileHeld(
            `${e.message}; waited ${waitMs / 1000} s. One process counts per quota file: share counts between processes with --quotas redis://HOST:PORT, or give each its own file`,
          );
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  private load(): void {
    let text: string;
    try {
      text = readFileSync(this.file, 'utf8');
    } catch {
      return; // no file yet: no counts yet
    }
    try {
      const doc = JSON.parse(text) as { schema: number; credentials: Record<string, Counts> };
      if (doc.schema !== 1 || typeof doc.credentials !== 'object') throw new Error('expected {"schema": 1, "credentials": {...}}');
      for (const [k, c] of Object.entries(doc.credentials)) {
        if (!Array.isArray(c.minute) || typeof c.monthStart !== 'number' || typeof c.month !== 'number')
          throw new Error(`credentials.${k}: expected minute, monthStart, month`);
        this.counts.set(k, { minute: c.minute.filter(Number.isFinite), monthStart: c.monthStart, month: c.month });
      }
    } catch (e) {
      // Refusing to start would take the API down over a counter file; set it aside, named, and count anew.
      const aside = `${this.file}.unreadable-${Date.now()}`;
      renameSync(this.file, aside);
      this.log(`quotas: ${this.file}: ${(e as Error).message}; moved to ${aside}, counting from zero`);
    }
  }

  override take(credential: string, limits: Limits, now: number, month: MonthWindow): Admission {
    const a = super.take(credential, limits, now, month);
    if (a.ok) this.dirty = true;
    return a;
  }

  flush(): void {
    if (!this.dirty) return;
    this.dirty = false;
    const tmp = `${this.file}.${process.pid}.tmp`;
    try {
      writeFileSync(tmp, JSON.stringify({ schema: 1, credentials: Object.fromEntries(this.counts) }));
      renameSync(tmp, this.file);
    } catch (e) {
      this.dirty = true;
      this.log(`quotas: cannot save ${this.file}: ${(e as Error).message}`);
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.flush();
    await this.lock.release();
  }
}

export interface DiskOptions {
  flushMs?: number;
  log?: (m: string) => void;
  /** How long to wait for another process to let go of the file (a rolling restart). */
  waitMs?: number;
}

/**
 * One atomic round trip per charge: the sliding minute is a sorted set of admitted times, the month a counter
 * that expires a day after the month ends. Same rule as `admit`: a refused request is counted nowhere. Times are
 * the shim's clock; expiries are relative, so a clock that differs from Redis's changes nothing.
 */
const TAKE = `
local now, perMinute, perMonth, monthEnd = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - ${MINUTE_MS})
local n = redis.call('ZCARD', KEYS[1])
local function resetMs()
  local o = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  if o[2] then return tonumber(o[2]) + ${MINUTE_MS} - now end
  return 0
end
local m = tonumber(redis.call('GET', KEYS[2]) or '0')
if n >= perMinute then local r = resetMs(); return {0, 1, 0, r, r, math.max(0, perMonth - m)} end
if m >= perMonth then return {0, 2, perMinute - n, resetMs(), monthEnd - now, 0} end
redis.call('ZADD', KEYS[1], now, ARGV[5])
redis.call('PEXPIRE', KEYS[1], ${MINUTE_MS})
redis.call('INCR', KEYS[2])
redis.call('PEXPIRE', KEYS[2], monthEnd - now + 86400000)
return {1, 0, perMinute - n - 1, resetMs(), 0, perMonth - m - 1}
`;

type TakeReply = [number, number, number, number, number, number];

/** One request admitted elsewhere, counted without a check: into the minute (a later take drops it once old) and the month. */
const RECORD = `
redis.call('ZADD', KEYS[1], tonumber(ARGV[1]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], ${MINUTE_MS})
redis.call('INCR', KEYS[2])
redis.call('PEXPIRE', KEYS[2], math.max(tonumber(ARGV[2]) - tonumber(ARGV[1]), 0) + 86400000)
return 1
`;

export class RedisQuotaStore implements QuotaStore {
  readonly redis: Redis;
  /** `prefix` namespaces the keys (several deployments, or tests, on one Redis). */
  constructor(
    url: string,
    private prefix = 'rr:q:',
  ) {
    // Fail fast while Redis is away (no queueing, a bounded wait): the fallback answers instead.
    this.redis = new Redis(url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: 500,
      connectTimeout: 1_000,
      lazyConnect: false,
    });
    this.redis.on('error', () => {}); // reported through the failing commands, once a minute
    this.redis.defineCommand('rrTake', { numberOfKeys: 2, lua: TAKE });
    this.redis.defineCommand('rrRecord', { numberOfKeys: 2, lua: RECORD });
    this.connected = new Promise((resolve) => {
      this.redis.once('ready', resolve);
      setTimeout(resolve, 1_000).unref();
    });
  }

  /** The first connection, waited for (a second at most) so the first requests after a start are counted too. */
  private connected: Promise<unknown>;

  async take(credential: string, limits: Limits, now: number, month: MonthWindow): Promise<Admission> {
    if (this.redis.status !== 'ready') await this.connected;
    const take = (this.redis as unknown as { rrTake: (...a: (string | number)[]) => Promise<TakeReply> }).rrTake;
    const [ok, code, remaining, resetMs, retryMs, monthRemaining] = await take.call(
      this.redis,
      `${this.prefix}${credential}:minute`,
      `${this.prefix}${credential}:month:${month.start}`,
      now,
      limits.perMinute,
      limits.perMonth,
      month.end,
      `${now}:${randomBytes(6).toString('hex')}`,
    );
    const refused = code === 1 ? 'rate_limited' : code === 2 ? 'quota_exceeded' : undefined;
    return { ok: ok === 1, code: refused, remaining, resetMs, retryMs, monthRemaining };
  }

  async record(charges: Charge[]): Promise<void> {
    for (let i = 0; i < charges.length; i += 1_000) {
      const pipeline = this.redis.pipeline() as unknown as { rrRecord: (...a: (string | number)[]) => void; exec: Redis['exec'] };
      for (const c of charges.slice(i, i + 1_000))
        pipeline.rrRecord(
          `${this.prefix}${c.credential}:minute`,
          `${this.prefix}${c.credential}:month:${c.month.start}`,
          c.now,
          c.month.end,
          `${c.now}:${randomBytes(6).toString('hex')}`,
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

/** `serve --quotas`: `redis://...` (shared), `memory` (this process only), or a file (the default: beside the tree). */
export async function openQuotaStore(spec: string, log: (m: string) => void, waitMs?: number): Promise<QuotaStore> {
  if (/^rediss?:\/\//.test(spec)) return new FallbackQuotaStore(new RedisQuotaStore(spec), log);
  if (spec === 'memory') return new MemoryQuotaStore();
  return DiskQuotaStore.open(resolve(spec), { log, waitMs });
}
