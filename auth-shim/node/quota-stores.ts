/**
 * The Node server's quota stores (decision 21): counts that survive a restart (a file on local disk, the
 * default) or are shared by a fleet (Redis), and the in-process fallback that keeps answering when a shared
 * store cannot be reached. Each keeps every credential's monthly totals for the current month and the thirteen
 * before it (decision 38), which `risk-readings usage` reads (quota-totals.ts).
 */
import { existsSync, ftruncateSync, linkSync, writeSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { Redis } from 'ioredis';
import { LockHeld, lockFile, type Lock } from '../../generator/output/lock.js';
import {
  admit,
  copyCounts,
  FallbackQuotaStore,
  MemoryQuotaStore,
  MINUTE_MS,
  MONTHS_KEPT,
  monthsAfter,
  refundMonth,
  type Admission,
  type Charge,
  type Counts,
  type Limits,
  type MonthUse,
  type MonthWindow,
  type QuotaStore,
} from '../quota.js';
import {
  journalFile,
  JournalRecords,
  keepBackupSync,
  MAGIC,
  readQuotaFile,
  removeJournalsBefore,
  setAside,
  unlinkBackupFromSnapshotSync,
  writeSnapshot,
  writeSnapshotSync,
} from './quota-file.js';

export { QuotaFileDamaged } from './quota-file.js';

/** Another process counts in this quota file (exit 3 from `serve`): names it and says what to use instead. */
export class QuotaFileHeld extends Error {}

/** Journal bytes past which a compaction pays: at least this, and at least the snapshot's size. */
const COMPACT_MIN_BYTES = 16 * 1024 * 1024;
/** After a compaction that failed (a full disk), the wait before the next try. */
const COMPACT_RETRY_MS = 60_000;
/** Records kept in memory while the journal cannot be written; past this, the next snapshot holds them instead. */
const MAX_UNWRITTEN = 32 * 1024 * 1024;

/**
 * Counts held in memory, saved to `file` (quota-file.ts): each request counted adds a few bytes of record in memory,
 * and at most once a second what accumulated is appended to the journal in one write, so a save costs what was
 * counted since the last one, never every credential; a restart loses at most the last second. Now and then a
 * compaction writes the whole snapshot a slice at a time, between requests, and keeps the one before it as `.bak`.
 * `close()` saves at once and lets go of the file; the CLI calls it on SIGTERM and SIGINT.
 *
 * One process counts in a file at a time: `open` takes `<file>.lock` (naming its holder) and waits, up to
 * `waitMs`, for a process still holding it, as in a rolling restart where the old server drains and saves its
 * counts before the new one loads them. Two processes counting in one file would each overwrite the other's.
 *
 * A file that cannot be read is refused (QuotaFileDamaged), never taken for empty counts; `discardDamaged` starts
 * from what can still be read instead, and moves the damaged files aside.
 */
export class DiskQuotaStore extends MemoryQuotaStore {
  private readonly records = new JournalRecords();
  private readonly timer: ReturnType<typeof setInterval>;
  private compacting: Promise<void> | null = null;
  private compactAfter = 0;
  /** While a snapshot is written: each credential's counts as they stood when it was cut (null: not in it). */
  private frozen: Map<string, Counts | null> | null = null;
  private syncing = false;
  private closed = false;

  private constructor(
    readonly file: string,
    private journal: FileHandle,
    private generation: number,
    /** The generation the snapshot on disk continues at; the journals before the previous one's are removed. */
    private snapshotGeneration: number,
    private journalBytes: number,
    private journalTotal: number,
    private snapshotBytes: number,
    private readonly options: Required<Pick<DiskOptions, 'log' | 'compactBytes'>>,
    private readonly lock: Lock,
    flushMs: number,
  ) {
    super();
    this.timer = setInterval(() => this.flush(), flushMs);
    this.timer.unref();
  }

  static async open(file: string, options: DiskOptions = {}): Promise<DiskQuotaStore> {
    const { waitMs = 30_000 } = options;
    const held = 'another process counts in this quota file';
    const deadline = Date.now() + waitMs;
    for (;;) {
      let lock: Lock;
      try {
        lock = await lockFile(`${file}.lock`, `risk-readings serve (pid ${process.pid})`, held);
      } catch (e) {
        if (!(e instanceof LockHeld)) throw e;
        if (Date.now() >= deadline)
          throw new QuotaFileHeld(
            `${e.message}; waited ${waitMs / 1000} s. One process counts per quota file: share counts between processes with --quotas redis://HOST:PORT, or give each its own file`,
          );
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      try {
        return await DiskQuotaStore.load(file, options, lock);
      } catch (e) {
        await lock.release();
        throw e;
      }
    }
  }

  private static async load(file: string, options: DiskOptions, lock: Lock): Promise<DiskQuotaStore> {
    const { flushMs = 1_000, log = () => {}, discardDamaged = false, compactBytes = COMPACT_MIN_BYTES } = options;
    let state = readQuotaFile(file, { salvage: discardDamaged });
    if (state?.damaged.length) {
      const at = new Date();
      const moved = state.damaged.map((path) => `${path} -> ${setAside(path, at)}`);
      log(
        `quotas: ${state.notes.join('; ')}; --discard-damaged-quotas: counting on from what could be read; moved aside: ${moved.join(', ')}`,
      );
    } else for (const note of state?.notes ?? []) log(`quotas: ${note}`);
    state ??= {
      counts: new Map(),
      snapshotGeneration: 0,
      generation: 1,
      journalBytes: 0,
      journalTotal: 0,
      snapshotBytes: 0,
      legacy: false,
      notes: [],
      damaged: [],
    };
    let snapshotBytes = state.snapshotBytes;
    // No snapshot of this format yet (a first start, a file of the first format, a salvage): write one now, and keep
    // it as the last good copy from the start. A file of the first format stays beside it, as it was.
    if (state.snapshotGeneration === 0) {
      if (state.legacy && !existsSync(`${file}.schema-1`)) linkSync(file, `${file}.schema-1`);
      snapshotBytes = writeSnapshotSync(file, state.generation, state.counts);
      keepBackupSync(file);
    } else if (unlinkBackupFromSnapshotSync(file)) log(`quotas: ${file}.bak was another name for ${file}; it is now a copy of its own`);
    const journal = await openJournal(file, state.generation, state.journalBytes);
    const store = new DiskQuotaStore(
      file,
      journal,
      state.generation,
      state.snapshotGeneration || state.generation,
      Math.max(state.journalBytes, MAGIC.length),
      state.journalTotal,
      snapshotBytes,
      { log, compactBytes },
      lock,
      flushMs,
    );
    for (const [k, c] of state.counts) store.counts.set(k, c);
    return store;
  }

  /** Keeps a credential's counts as the snapshot being written cut them, before they change. */
  private freeze(credential: string): void {
    if (this.frozen!.has(credential)) return;
    const c = this.counts.get(credential);
    this.frozen!.set(credential, c ? copyCounts(c) : null);
  }

  override take(credential: string, limits: Limits, now: number, month: MonthWindow, use: MonthUse = 'request'): Admission {
    if (this.frozen) this.freeze(credential);
    const c = this.countsOf(credential, month);
    const a = admit(c, limits, now, month, use);
    if (a.ok) this.records.admitted(credential, c, now, month.start, !a.monthCharged);
    return a;
  }

  override refund(credential: string, month: MonthWindow): void {
    const c = this.counts.get(credential);
    if (!c) return;
    if (this.frozen) this.freeze(credential);
    refundMonth(c, month);
    this.records.refunded(credential, c, month.start);
  }

  /** Appends what was counted since the last flush to the journal, in one write: bytes in proportion to it. */
  flush(): void {
    const frame = this.records.frame();
    if (!frame || this.closed) return;
    try {
      for (let at = 0; at < frame.length;) at += writeSync(this.journal.fd, frame, at);
    } catch (e) {
      // A part written (a full disk) would leave half a frame: cut it off, and keep the records for the next flush.
      try {
        ftruncateSync(this.journal.fd, this.journalBytes);
      } catch {
        // the frame's checksum tells the load it is cut short; the next flush writes after it
      }
      this.options.log(`quotas: cannot save ${journalFile(this.file, this.generation)}: ${(e as Error).message}`);
      if (this.records.size > MAX_UNWRITTEN) {
        // Memory holds every count: the next snapshot saves them all, so the records need not wait any longer (the
        // credentials are named again in what follows).
        this.records.startJournal();
        this.compactAfter = 0;
        this.startCompaction();
      }
      return;
    }
    this.records.written();
    this.journalBytes += frame.length;
    this.journalTotal += frame.length;
    this.syncSoon();
    if (Date.now() >= this.compactAfter && this.journalTotal > Math.max(this.options.compactBytes, this.snapshotBytes))
      this.startCompaction();
  }

  private startCompaction(): void {
    if (!this.compacting && !this.closed) this.compacting = this.compact().finally(() => (this.compacting = null));
  }

  /** Puts the journal on the disk itself, off the main thread; one at a time (each covers every write before it). */
  private syncSoon(): void {
    if (this.syncing) return;
    this.syncing = true;
    this.journal
      .datasync()
      .catch((e: Error) => this.options.log(`quotas: cannot sync ${journalFile(this.file, this.generation)}: ${e.message}`))
      .finally(() => (this.syncing = false));
  }

  /**
   * A new snapshot, so that the journals stay short. The journal turns to the next generation at the instant the
   * snapshot is cut; the counts as they stood then are written a slice at a time (requests are answered between
   * slices, and a credential counted meanwhile keeps a copy of its counts as cut), synced and renamed into place, the
   * previous snapshot kept as `.bak` with its journal; older journals are removed.
   */
  private async compact(): Promise<void> {
    const next = this.generation + 1;
    let journal: FileHandle;
    try {
      journal = await openJournal(this.file, next, 0);
    } catch (e) {
      this.compactAfter = Date.now() + COMPACT_RETRY_MS;
      this.options.log(`quotas: cannot start ${journalFile(this.file, next)}: ${(e as Error).message}`);
      return;
    }
    if (this.closed) return void (await journal.close());
    // The cut: what was counted before it goes to this journal, what comes after to the next.
    this.flush();
    if (this.records.size) {
      await journal.close();
      this.compactAfter = Date.now() + COMPACT_RETRY_MS;
      return;
    }
    const old = this.journal;
    [this.journal, this.generation, this.journalBytes] = [journal, next, MAGIC.length];
    this.records.startJournal();
    this.syncing = false;
    this.frozen = new Map();
    const frozen = this.frozen;
    await old.close();
    try {
      this.snapshotBytes = await writeSnapshot(this.file, next, this.counts.keys(), (k) =>
        frozen.has(k) ? frozen.get(k)! : this.counts.get(k)!,
      );
    } catch (e) {
      // The journals from the snapshot on disk on are all kept: the counts stand as they were, only longer to read.
      this.compactAfter = Date.now() + COMPACT_RETRY_MS;
      this.options.log(`quotas: cannot write ${this.file}: ${(e as Error).message}; the journals keep every count meanwhile`);
      return;
    } finally {
      this.frozen = null;
    }
    // What the snapshot holds no longer counts toward the next compaction; what came after it is in the new journal.
    this.journalTotal = this.journalBytes;
    const previous = this.snapshotGeneration;
    this.snapshotGeneration = next;
    // The `.bak` snapshot continues at `previous`: its journals stay, and the ones before them go.
    removeJournalsBefore(this.file, previous);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    clearInterval(this.timer);
    await this.compacting;
    this.flush();
    this.closed = true;
    await this.journal.datasync().catch(() => {});
    await this.journal.close();
    await this.lock.release();
  }
}

/** The journal `generation` open for appending, cut to its `whole` bytes (a frame a crash cut short goes), begun with MAGIC. */
async function openJournal(file: string, generation: number, whole: number): Promise<FileHandle> {
  const fh = await open(journalFile(file, generation), 'a');
  try {
    const { size } = await fh.stat();
    if (size > whole) await fh.truncate(whole);
    if (whole === 0) {
      await fh.write(MAGIC);
      await fh.datasync();
    }
    return fh;
  } catch (e) {
    await fh.close();
    throw e;
  }
}

export interface DiskOptions {
  flushMs?: number;
  log?: (m: string) => void;
  /** How long to wait for another process to let go of the file (a rolling restart). */
  waitMs?: number;
  /** Start from what can still be read of a damaged file, moving the damaged files aside (`serve --discard-damaged-quotas`). */
  discardDamaged?: boolean;
  /** Journal bytes past which a compaction runs (at least the snapshot's size); tests make it small. */
  compactBytes?: number;
}

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

export interface OpenOptions {
  /** `serve --discard-damaged-quotas`: a damaged quota file is set aside and counting goes on from what it still holds. */
  discardDamaged?: boolean;
}

/** `serve --quotas`: `redis://...` (shared), `memory` (this process only), or a file (the default: beside the tree). */
export async function openQuotaStore(spec: string, log: (m: string) => void, waitMs?: number, o: OpenOptions = {}): Promise<QuotaStore> {
  if (/^rediss?:\/\//.test(spec)) return new FallbackQuotaStore(new RedisQuotaStore(spec), log);
  if (spec === 'memory') return new MemoryQuotaStore();
  return DiskQuotaStore.open(resolve(spec), { log, waitMs, discardDamaged: o.discardDamaged });
}
