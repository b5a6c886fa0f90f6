/**
 * The Redis quota store (decision 21): counts shared by a fleet. One atomic round trip per charge; what a fallback
 * counted while Redis could not be reached is recorded when it answers again.
 */
import { randomBytes } from 'node:crypto';
import { appendFileSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Redis, ReplyError } from 'ioredis';
import { z } from 'zod';
import {
  chargeCount,
  FallbackQuotaStore,
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
import { pidAlive } from '../../generator/output/lock.js';
import { asideName, QuotaStoreDamaged, writePrivately } from './quota-database.js';

/** How long a month's counter lives in Redis: until its month is more than MONTHS_KEPT months back, and a day more. */
export const keepMs = (month: MonthWindow, now: number): number => monthsAfter(month.start, MONTHS_KEPT + 1) - now + 86_400_000;
/**
 * How long a client's watermark (ONCE) lives after its last command: as long as any month counter it could count a
 * charge into twice (a file of owed charges recorded again after a crash, however late). One small key per start.
 */
const APPLIED_MS = (MONTHS_KEPT + 2) * 31 * 86_400_000;

const USES: Record<MonthUse, number> = { request: 0, minute: 1, revalidation: 2 };

/**
 * Each charge counted at most once, whatever Redis does (a stall past the deadline, a dropped connection, a lost
 * reply). Every command that changes counts carries this client's next number (`seq`, in send order) and runs only
 * if it is above the client's watermark in Redis, which it then raises to its own: no number is applied twice. A
 * take or refund that fails unanswered rejects with its number, and the charge the fallback owes for it keeps it;
 * a charge never sent takes one when first recorded and keeps it on every retry. So a record is skipped exactly
 * when its take, its refund or an earlier try of it ran. None is lost: one connection runs its commands in order, a
 * dropped connection's were all sent before a later one's, and once a charge is owed the fallback sends nothing but
 * records, in number order. A command that reaches Redis behind a higher number (a dropped connection's, late) is
 * refused with an error, which runs nothing: the record sent for it stands for it.
 */
const ONCE = `
local last = tonumber(redis.call('GET', KEYS[#KEYS]) or '-1')
if tonumber(ARGV[1]) <= last then return redis.error_reply('STALE a later command of this client ran first') end
redis.call('SET', KEYS[#KEYS], ARGV[1], 'PX', ${APPLIED_MS})
`;

/**
 * One atomic round trip per charge: the sliding minute is a sorted set of admitted times, the month a counter kept
 * for MONTHS_KEPT months after it (the billing read). Same rule as `admit`, in its order (a spent month first): a
 * refused request is counted nowhere. Times are the shim's clock; expiries are relative, so a clock that differs from
 * Redis's changes nothing.
 */
const TAKE = `${ONCE}
local now, perMinute, perMonth, monthEnd, use, keep = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[7]), tonumber(ARGV[8])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - ${MINUTE_MS})
local n = redis.call('ZCARD', KEYS[1])
local function resetMs()
  local o = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  if o[2] then return tonumber(o[2]) + ${MINUTE_MS} - now end
  return 0
end
local m = tonumber(redis.call('GET', KEYS[2]) or '0')
local spent = m >= perMonth
if spent and use == 0 then return {0, 2, math.max(0, perMinute - n), resetMs(), monthEnd - now, 0, n, m, 0} end
if n >= perMinute then local r = resetMs(); return {0, 1, 0, r, r, math.max(0, perMonth - m), n, m, 0} end
redis.call('ZADD', KEYS[1], now, ARGV[6])
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
const REFUND = `${ONCE}
local m = tonumber(redis.call('GET', KEYS[1]) or '0')
if m > 0 then redis.call('DECR', KEYS[1]) end
return m
`;

/**
 * What a fallback counted meanwhile, recorded without a check, a batch to a script (one per charge was too slow for
 * a loaded server to catch up): each into the minute (a later take drops it once old) and the month. One already
 * applied (as a take, a refund or an earlier record) is skipped, as ONCE skips it. KEYS are each charge's minute,
 * month and watermark keys, ARGV its number, time, month's life, member and kind; returns how many it applied.
 */
const RECORD = `
local marks, raised, applied = {}, {}, 0
for i = 0, #KEYS / 3 - 1 do
  local minute, month, mark = KEYS[3 * i + 1], KEYS[3 * i + 2], KEYS[3 * i + 3]
  local seq, kind = tonumber(ARGV[5 * i + 1]), ARGV[5 * i + 5]
  marks[mark] = marks[mark] or tonumber(redis.call('GET', mark) or '-1')
  if seq > marks[mark] then
    marks[mark], raised[mark] = seq, ARGV[5 * i + 1]
    applied = applied + 1
    if kind == 'refund' then
      if tonumber(redis.call('GET', month) or '0') > 0 then redis.call('DECR', month) end
    else
      redis.call('ZADD', minute, tonumber(ARGV[5 * i + 2]), ARGV[5 * i + 4])
      redis.call('PEXPIRE', minute, ${MINUTE_MS})
      if kind == 'request' then
        redis.call('INCR', month)
        redis.call('PEXPIRE', month, math.max(tonumber(ARGV[5 * i + 3]), 1))
      end
    end
  end
end
for mark, seq in pairs(raised) do redis.call('SET', mark, seq, 'PX', ${APPLIED_MS}) end
return applied
`;

/** The Redis keys of a credential's minute and of its month (the billing read finds months by this name). */
export const redisKeys = (prefix: string, credential: string, month: MonthWindow) =>
  [`${prefix}${credential}:minute`, `${prefix}${credential}:month:${month.start}`] as const;
export const DEFAULT_REDIS_PREFIX = 'rr:q:';

export interface RedisOptions {
  /** How long a charge waits for Redis before the fallback answers (default 500 ms). */
  timeoutMs?: number;
  /** Where to say that Redis came back without what it held (`lost`). */
  log?: (m: string) => void;
}

type Script<T> = (...a: (string | number)[]) => Promise<T>;

export class RedisQuotaStore implements QuotaStore {
  readonly redis: Redis;
  /** The first connection: requests wait for it (or for it to fail) so the first requests after a start are counted too. */
  private connected: Promise<void>;
  /** This client among those sharing Redis (random, so members of a sorted set never collide), and its next number. */
  private readonly id = randomBytes(6).toString('hex');
  private seq = 0;
  /** The key of this client's watermark (ONCE). */
  private readonly applied: string;
  private readonly timeoutMs: number;
  /** Whether this client has seen `<prefix>since` in Redis (`lost`). */
  private marked = false;
  /** Why the connection last failed (a refused connection, a wrong password), which "down" alone would not say. */
  private why = '';

  /** `prefix` namespaces the keys (several deployments, or tests, on one Redis). */
  constructor(
    url: string,
    readonly prefix = DEFAULT_REDIS_PREFIX,
    { timeoutMs = 500, log = () => {} }: RedisOptions = {},
  ) {
    this.applied = `${prefix}applied:${this.id}`;
    this.timeoutMs = timeoutMs;
    // Fail fast while Redis is away or late (no queueing, a deadline on each command): the fallback answers instead.
    this.redis = new Redis(url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: timeoutMs,
      connectTimeout: 1_000,
    });
    this.redis.on('error', (e: Error) => (this.why = e.message)); // reported through the failing commands, once a minute
    this.redis.on('ready', () => {
      this.why = '';
      void this.lost(log);
    });
    this.redis.defineCommand('rrTake', { numberOfKeys: 3, lua: TAKE });
    this.redis.defineCommand('rrRefund', { numberOfKeys: 2, lua: REFUND });
    this.redis.defineCommand('rrRecord', { lua: RECORD }); // its number of keys first: a batch's own
    this.connected = new Promise<void>((resolve) => {
      const events = ['ready', 'error', 'end'];
      const done = () => {
        for (const e of events) this.redis.off(e, done);
        resolve();
      };
      for (const e of events) this.redis.on(e, done);
    });
  }

  /**
   * Whether Redis lost what it held since this client last connected (restarted without persistence, or flushed):
   * a key set once and never expiring, gone after a reconnect, says so. The counts it held are gone, and nothing
   * else would tell: said once per reconnect, as an error billing must hear of.
   */
  private async lost(log: (m: string) => void): Promise<void> {
    const made = await this.redis.set(`${this.prefix}since`, new Date().toISOString(), 'NX').catch(() => undefined);
    if (made === 'OK' && this.marked)
      log(
        'quotas: Redis came back without the counts it held (restarted without persistence, or flushed): every count before now is gone from it, this month included; run Redis with appendonly yes',
      );
    this.marked ||= made !== undefined;
  }

  /**
   * An error Redis answered ran nothing; any other failure may have run the command, so it carries the command's
   * number, on an error of its own (a dropped connection rejects every command waiting with one error).
   */
  private failed(seq: number) {
    return (e: Error): never => {
      if (e instanceof ReplyError) throw e;
      throw Object.assign(this.said(e), { seq });
    };
  }

  /** ioredis's own words for a connection that is down or late name its options: said as what they mean. */
  private said(e: Error): Error {
    const message =
      e.message === 'Command timed out'
        ? `Redis did not answer within ${this.timeoutMs} ms`
        : /enableOfflineQueue|maxRetriesPerRequest/.test(e.message)
          ? `the connection to Redis is down${this.why ? ` (${this.why})` : ''}`
          : e.message;
    return new Error(message, { cause: e });
  }

  /** A request's member in the minute's sorted set: its time, then its client and number (no other request's). */
  private member(now: number, seq: number, client = this.id): string {
    return `${now}:${client}${seq.toString(36)}`;
  }

  /**
   * Charges numbered as this client's where not sent yet, in place (a later record sends each under the number kept),
   * so that whichever process records them does so once.
   */
  own(charges: Charge[]): Charge[] {
    for (const c of charges) [c.seq, c.client] = [c.seq ?? this.seq++, c.client ?? this.id];
    return charges;
  }

  take(credential: string, limits: Limits, now: number, month: MonthWindow, use: MonthUse = 'request'): Promise<Admission> {
    const send = () => {
      const seq = this.seq++;
      return (this.redis as unknown as { rrTake: Script<TakeReply> })
        .rrTake(
          ...redisKeys(this.prefix, credential, month),
          this.applied,
          seq,
          now,
          limits.perMinute,
          limits.perMonth,
          month.end,
          this.member(now, seq),
          USES[use],
          keepMs(month, now),
        )
        .then(admission, this.failed(seq));
    };
    return this.redis.status === 'ready' ? send() : this.connected.then(send);
  }

  async refund(credential: string, month: MonthWindow): Promise<void> {
    const seq = this.seq++;
    const redis = this.redis as unknown as { rrRefund: Script<number> };
    await redis.rrRefund(redisKeys(this.prefix, credential, month)[1], this.applied, seq).catch(this.failed(seq));
  }

  /**
   * Each charge keeps the number it was first sent under (`own`): a batch that failed is sent again whole, as one
   * script call (the fallback sends BATCH at a time). Returns how many Redis had not applied already.
   */
  async record(charges: Charge[]): Promise<number> {
    const [keys, args]: [string[], (string | number)[]] = [[], []];
    for (const c of this.own(charges)) {
      keys.push(...redisKeys(this.prefix, c.credential, c.month), `${this.prefix}applied:${c.client}`);
      args.push(c.seq!, c.now, keepMs(c.month, c.now || Date.now()), this.member(c.now, c.seq!, c.client), c.kind);
    }
    const redis = this.redis as unknown as { rrRecord: Script<number> };
    return redis.rrRecord(keys.length, ...keys, ...args).catch((e: Error) => Promise.reject(this.said(e)));
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}

/**
 * Where an instance keeps the charges it owes Redis, beside the tree: `<dir>/<OWED><pid>-<time>.jsonl`, a JSON array
 * of charges per line, a line appended each second (releases before wrote one array, whole, to `.json`; a release
 * before those named no pid: `<OWED><time>.json`).
 */
const OWED_BASE = '.risk-readings-quotas';
const OWED = `${OWED_BASE}.owed-`;
const Owed = z.array(
  z.object({
    credential: z.string(),
    now: z.number(),
    month: z.object({ start: z.number(), end: z.number() }),
    kind: z.enum(['request', 'minute', 'refund']),
    seq: z.number().int(),
    client: z.string(),
  }),
);

const sizeOf = (f: string): number => statSync(f, { throwIfNoEntry: false })?.size ?? -1;

/**
 * The charges an owed file holds. A last line without its newline was cut short (a full disk, a machine that
 * stopped): its charges, the last second's, are dropped and said; any other line that is not charges is damage.
 */
function readOwed(f: string, log: (m: string) => void): Charge[] {
  const refused = (line: number, why: string) =>
    new QuotaStoreDamaged(
      `${f}: not the charges a stop kept (line ${line}: ${why}); ${f.endsWith('.json') ? 'move it aside to start without them' : 'delete that line to record the others, or move the file aside to start without any of them'}`,
    );
  const text = readFileSync(f, 'utf8');
  const lines = f.endsWith('.json') ? [text] : text.split('\n');
  const tail = f.endsWith('.json') ? -1 : lines.length - 1; // after the last newline: '' in a file that ends with one
  return lines.flatMap((line, i) => {
    if (i === tail && !line) return [];
    let why: string;
    try {
      const owed = Owed.safeParse(JSON.parse(line));
      if (owed.success) return owed.data;
      why = `${owed.error.issues[0]!.path.join('.') || 'the line'}: ${owed.error.issues[0]!.message}`;
    } catch (e) {
      why = (e as Error).message;
    }
    // Whole but for its newline (by hand) it was read above; else cut short by a crash or a full disk: dropped, said.
    if (i !== tail) throw refused(i + 1, why);
    log(`quotas: ${f}: its last line was cut short; the ${line.length} bytes of it are dropped`);
    return [];
  });
}

/**
 * The Redis store behind the in-process fallback (decision 21), with the charges a stop before could not record
 * (kept in `dir`) owed from the start, and what this one's stop cannot record kept there in turn. Each keeps the
 * number its client gave it, so a file recorded twice (a crash before its removal) counts once. `prefix` namespaces
 * its keys (the bench's own); serve counts under the default.
 */
export function redisWithFallback(url: string, log: (m: string) => void, dir?: string, prefix = DEFAULT_REDIS_PREFIX): FallbackQuotaStore {
  const redis = new RedisQuotaStore(url, prefix, { log });
  if (!dir) return new FallbackQuotaStore(redis, log);
  let mine: string | undefined; // this instance's file
  const [files, refused] = [[] as string[], new Set<string>()];
  /** The owed files in `dir` that are not this instance's nor another's that runs, and not taken in yet. */
  const left = (said = false): string[] =>
    readdirSync(dir)
      .filter((n) => n.startsWith(OWED) && /\.jsonl?$/.test(n))
      .filter((n) => {
        // A live instance's file on this machine (a rolling restart during an outage): it records them itself, and the
        // file is taken in by the next start after it ends.
        const pid = Number(/^(\d+)-\d{4}-/.exec(n.slice(OWED.length))?.[1]);
        const runs = pid && pid !== process.pid && pidAlive(pid);
        // Said at the start: a pid reused since (after a reboot) would otherwise keep a file unrecorded without a word.
        if (runs && said)
          log(
            `quotas: ${join(dir, n)} is left to process ${pid}, which runs (another serve over this tree); it is taken in once that ends`,
          );
        return !runs;
      })
      .sort()
      .map((n) => join(dir, n))
      .filter((f) => f !== mine && !files.includes(f) && !refused.has(f));
  files.push(...left(true));
  const owed = files.flatMap((f) => readOwed(f, log));
  if (owed.length)
    log(
      `quotas: owed to Redis: ${chargeCount(owed.length)} an instance before this one (stopped or killed) could not record, from ${files.join(', ')}`,
    );
  const taken = () => files.splice(0).forEach((f) => rmSync(f, { force: true }));
  let [inMine, bytes] = [0, 0]; // the charges in it, and its size
  const lines = (charges: Charge[]) => JSON.stringify(redis.own(charges)) + '\n';
  return new FallbackQuotaStore(redis, log, {
    owed,
    recorded: () => {
      taken();
      if (mine) rmSync(mine, { force: true });
      [inMine, bytes] = [0, 0];
    },
    // Another serve over this tree that ended since (a rolling restart during an outage): its file is taken in.
    adopt: () =>
      left().flatMap((f) => {
        try {
          const charges = readOwed(f, log);
          files.push(f);
          log(`quotas: owed to Redis: ${chargeCount(charges.length)} a serve that ended could not record, from ${f}`);
          return charges;
        } catch (e) {
          refused.add(f); // said once; a start after it is refused by it, as any
          log(`quotas: ${(e as Error).message}`);
          return [];
        }
      }),
    keep: (fresh, all) => {
      mine ??= `${asideName(join(dir, OWED_BASE), `owed-${process.pid}`)}.jsonl`;
      // The new ones appended (rewriting 200,000 owed each second held every request 300 ms); written whole again
      // once it holds twice what is owed, so it stays the size of what is owed, or once it is not as it was left
      // (removed, cut, or an append a full disk cut short).
      const whole = inMine + fresh.length > 2 * all.length || sizeOf(mine) !== bytes;
      bytes = -1; // a write that fails leaves the file to be written whole again
      if (whole) writePrivately(mine, lines(all));
      else if (fresh.length) appendFileSync(mine, lines(fresh), { mode: 0o600 });
      inMine = whole ? all.length : inMine + fresh.length;
      bytes = sizeOf(mine);
      taken(); // what they held is in this one now
      return mine;
    },
  });
}
