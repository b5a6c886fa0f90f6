/**
 * Quota stores (decision 21), each against the real thing: the rule the same in every store, counts that survive
 * a restart (the disk store, the default of `serve`), counts shared by a fleet (Redis), the fallback when the
 * shared store goes away, and the shim's whole behaviour run on every store. Tests that need Redis use REDIS_URL
 * (default redis://127.0.0.1:6379); where none answers they are skipped with the reason, except under CI=true.
 */
import { spawn } from 'node:child_process';
import {
  appendFileSync,
  copyFileSync,
  existsSync,
  linkSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { crc32 } from 'node:zlib';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHandler } from '../../auth-shim/handler.js';
import { DurableQuotaStore, QuotaCounter, type DurableObjectNamespaceLike } from '../../auth-shim/durable-quota.js';
import { FileOrigin } from '../../auth-shim/node/file-origin.js';
import { journalFile, MAGIC, readQuotaFile } from '../../auth-shim/node/quota-file.js';
import { DiskQuotaStore, QuotaFileDamaged, QuotaFileHeld } from '../../auth-shim/node/quota-stores.js';
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
import { BIN, cliAsync, tempDir, until } from '../helpers.js';
import { freePort, redisAway, REDIS_URL } from '../services.js';
import { expectError, minuteClock, shimSuite, type Call } from './suite.js';
import { KEY, KEYS_FILE, builtTree } from './tree.js';

const noRedis = await redisAway('the Redis quota tests');

const root = tempDir('rr-quota-');
const prefixes: string[] = [];
/** A key namespace of its own on the shared Redis (other engineers' tests use it too), removed when the file ends. */
const prefix = () => {
  const p = `rr:test:${randomBytes(6).toString('hex')}:`;
  prefixes.push(p);
  return p;
};
afterAll(async () => {
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
  ['disk', () => DiskQuotaStore.open(join(root, `q-${randomBytes(4).toString('hex')}.json`))],
  // A generous wait: these tests state the shared counts, not how soon a loaded machine gives up on Redis.
  ...(noRedis ? [] : [['redis', () => new RedisQuotaStore(REDIS_URL, prefix(), { timeoutMs: 10_000 })] as [string, () => QuotaStore]]),
];

/** A credential's requests in a month as the store keeps them: billing's read where there is one (disk, Redis). */
async function monthlyTotal(s: QuotaStore, credential: string, month: MonthWindow): Promise<number> {
  if (s instanceof DiskQuotaStore) {
    s.flush();
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
const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
};
const u16 = (n: number) => {
  const b = Buffer.alloc(2);
  b.writeUInt16LE(n);
  return b;
};
const f64 = (n: number) => {
  const b = Buffer.alloc(8);
  b.writeDoubleLE(n);
  return b;
};
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

  it('serve on a damaged quota file exits 3 naming it and how to recover; --discard-damaged-quotas starts from what is left', async () => {
    const file = join(root, 'served-damaged.json');
    const store = await DiskQuotaStore.open(file);
    store.take('key:g', basic, T0, monthOf(T0));
    await store.close();
    writeFileSync(file, readFileSync(file, 'utf8').slice(0, 20));
    const out = builtTree();
    const args = ['serve', '--public', out, '--keys', KEYS_FILE, '--port', String(await freePort()), '--quotas', file];
    const refused = await cliAsync(args);
    expect(refused.status).toBe(3);
    expect(refused.stderr).toMatch(
      new RegExp(`^risk-readings serve: ${file}: not JSON .*cp ${file}\\.bak ${file}.*serve --discard-damaged-quotas`),
    );
    expect(existsSync(`${file}.lock`)).toBe(false);
    const salvaging = spawn(process.execPath, [BIN, ...args, '--discard-damaged-quotas'], { stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      let said = '';
      salvaging.stdout.on('data', (d) => (said += String(d)));
      salvaging.stderr.on('data', (d) => (said += String(d)));
      expect(await until(() => said.includes('serving') && said.includes('moved aside'), 10_000)).toBe(true);
      expect(said).toMatch(/--discard-damaged-quotas: counting on from what could be read; moved aside: /);
    } finally {
      salvaging.kill('SIGTERM');
      await new Promise((r) => salvaging.once('exit', r));
    }
    expect(readQuotaFile(file)!.counts.get('key:g')).toMatchObject({ month: 1 });
  });

  it('writes at most a second after a change, without a close', async () => {
    const file = join(root, 'flush.json');
    const s = await open(() => DiskQuotaStore.open(file, { flushMs: 100 }));
    s.take('k', basic, T0, monthOf(T0));
    // Read as `usage` reads it, while the store holds the file.
    const written = await until(() => readQuotaFile(file)?.counts.get('k'), 1_000);
    expect(written).toMatchObject({ minute: [T0], month: 1 });
  });

  it('a flush writes what changed: one credential counted among 20,000 appends one record, not every credential', async () => {
    const file = join(root, 'twenty-thousand.json');
    const s = await open(() => DiskQuotaStore.open(file, { flushMs: 3_600_000 }));
    const limits = PLAN_LIMITS.ultra;
    for (let k = 0; k < 20_000; k++) for (let i = 0; i < 5; i++) s.take(`key:${k}`, limits, T0 + i, monthOf(T0));
    s.flush();
    const journal = journalFile(file, 1);
    const before = statSync(journal).size;
    expect(before).toBeGreaterThan(20_000 * 5 * 20);
    s.take('key:7', limits, T0 + 10, monthOf(T0));
    s.flush();
    // One frame (length and checksum) naming its one credential (decision 86) and holding one record: the
    // credential's number, the time and the month.
    const frame = 8 + 7 + 'key:7'.length + 21;
    expect(statSync(journal).size - before).toBe(frame);
    // Nothing counted, nothing written.
    s.flush();
    expect(statSync(journal).size - before).toBe(frame);
    await s.close();
    const again = await open(() => DiskQuotaStore.open(file));
    expect(again.take('key:7', limits, T0 + 20, monthOf(T0))).toMatchObject({ ok: true, minuteUsed: 7, monthUsed: 7 });
    expect(again.take('key:19999', limits, T0 + 20, monthOf(T0))).toMatchObject({ ok: true, minuteUsed: 6, monthUsed: 6 });
  });

  it('a request counted while a snapshot is written is in the journal after it, once: the counts neither lost nor doubled', async () => {
    const file = join(root, 'cut-while-writing.json');
    const s = await DiskQuotaStore.open(file, { flushMs: 3_600_000, compactBytes: 1 });
    const limits = { perMinute: 1_000, perMonth: 100_000 };
    const month = monthOf(T0);
    for (let k = 0; k < 5_000; k++) s.take(`key:${k}`, limits, T0, month);
    s.flush(); // past the threshold: the snapshot is cut now and written a slice at a time
    for (let k = 0; k < 5_000; k += 7) s.take(`key:${k}`, limits, T0 + 1, month);
    s.take('key:new', limits, T0 + 1, month);
    await until(
      () =>
        JSON.parse(
          readFileSync(file, 'utf8')
            .slice(0, 40)
            .replace(/,"credentials".*/, '}'),
        ).journal === 2,
    );
    await s.close();
    const counts = readQuotaFile(file)!.counts;
    for (let k = 0; k < 5_000; k++) expect(counts.get(`key:${k}`)!.month, `key:${k}`).toBe(k % 7 === 0 ? 2 : 1);
    expect(counts.get('key:new')!.month).toBe(1);
  });

  it('compacts the journal into a new snapshot, keeps the one before as .bak with its journal, and either restores every count', async () => {
    const file = join(root, 'compact.json');
    const s = await open(() => DiskQuotaStore.open(file, { flushMs: 3_600_000, compactBytes: 2_000 }));
    const month = monthOf(T0);
    const snapshotAt = () => JSON.parse(readFileSync(file, 'utf8')).journal as number;
    let n = 0;
    const round = async () => {
      n++;
      for (let k = 0; k < 20; k++) s.take(`key:${k}`, { perMinute: 1_000, perMonth: 1_000 }, T0 + n, month);
      s.flush();
    };
    while (snapshotAt() < 3 && n < 200) {
      await round();
      await new Promise((r) => setTimeout(r, 5));
    }
    await s.close();
    // The snapshot continues at journal g; its .bak at g - 1, whose journal is kept; older ones are no longer needed.
    const g = snapshotAt();
    expect(g).toBeGreaterThanOrEqual(3);
    expect(JSON.parse(readFileSync(`${file}.bak`, 'utf8')).journal).toBe(g - 1);
    expect(existsSync(journalFile(file, g - 2))).toBe(false);
    expect(existsSync(journalFile(file, g - 1))).toBe(true);
    const counted = (state: ReturnType<typeof readQuotaFile>) => [...state!.counts.values()].map((c) => c.month);
    expect(counted(readQuotaFile(file))).toEqual(Array(20).fill(n));
    copyFileSync(`${file}.bak`, file);
    expect(counted(readQuotaFile(file))).toEqual(Array(20).fill(n));
  });

  it('a file cut mid-document: the store refuses to start, naming the file and how to recover, and never counts from zero', async () => {
    const file = join(root, 'cut.json');
    const s = await DiskQuotaStore.open(file, { compactBytes: 1 });
    for (let i = 0; i < 4; i++) s.take('key:a', basic, T0 + i, monthOf(T0));
    s.flush();
    await until(() => JSON.parse(readFileSync(file, 'utf8')).journal === 2);
    await s.close();
    truncateSync(file, Math.floor(statSync(file).size / 2));
    const error = await DiskQuotaStore.open(file, { waitMs: 0 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QuotaFileDamaged);
    expect((error as Error).message).toMatch(new RegExp(`^${file}: not JSON \\(.+\\); the file may have been cut short\\. `));
    expect((error as Error).message).toContain(`cp ${file}.bak ${file}`);
    expect((error as Error).message).toContain('--discard-damaged-quotas');
    // Refused, it let go of the file: restoring the copy before it gives every count back.
    copyFileSync(`${file}.bak`, file);
    const restored = await open(() => DiskQuotaStore.open(file));
    expect(restored.take('key:a', basic, T0 + 5, monthOf(T0))).toMatchObject({ ok: true, minuteUsed: 5, monthUsed: 5 });
  });

  it('--discard-damaged-quotas: starts from what can still be read and moves the damaged file aside', async () => {
    const file = join(root, 'salvage.json');
    const s = await DiskQuotaStore.open(file);
    for (let i = 0; i < 3; i++) s.take('key:b', basic, T0 + i, monthOf(T0));
    await s.close();
    writeFileSync(file, '{"schema": 2, "journal": 1, "credentials": {');
    const logs: string[] = [];
    const salvaged = await open(() => DiskQuotaStore.open(file, { discardDamaged: true, log: (m) => logs.push(m) }));
    // The journal still held key:b's state.
    expect(salvaged.take('key:b', basic, T0 + 4, monthOf(T0))).toMatchObject({ ok: true, minuteUsed: 4, monthUsed: 4 });
    expect(logs.join('\n')).toMatch(
      /--discard-damaged-quotas: counting on from what could be read; moved aside: .*salvage\.json -> .*salvage\.json\.damaged-/,
    );
    const aside = readdirSync(root).filter((n) => n.startsWith('salvage.json.damaged-'));
    expect(aside).toHaveLength(1);
    expect(readFileSync(join(root, aside[0]!), 'utf8')).toBe('{"schema": 2, "journal": 1, "credentials": {');
  });

  it('a damaged frame inside a journal is refused, named by file and frame', async () => {
    const file = join(root, 'bad-frame.json');
    const s = await DiskQuotaStore.open(file);
    s.take('key:c', basic, T0, monthOf(T0));
    s.flush();
    s.take('key:d', basic, T0, monthOf(T0));
    await s.close();
    const journal = journalFile(file, 1);
    const bytes = readFileSync(journal);
    const inFirstFrame = MAGIC.length + 8 + 3; // a byte of its first record; the second frame follows it
    bytes[inFirstFrame] = bytes[inFirstFrame]! ^ 0xff;
    writeFileSync(journal, bytes);
    const error = await DiskQuotaStore.open(file).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QuotaFileDamaged);
    expect((error as Error).message).toMatch(new RegExp(`^${journal}: frame 1 fails its checksum\\. `));
    // The copy cannot help with a journal's damage: the advice is the salvage, saying what it keeps and drops.
    expect((error as Error).message).toContain(`restoring ${file}.bak would not help, since the damage is in a journal it needs too`);
    expect((error as Error).message).toMatch(
      /--discard-damaged-quotas, which keeps the 1 journal frame that checks and drops only frame 1 \(\d+ bytes from byte 19\) of /,
    );
  });

  it('the copy (.bak) is a file of its own from the first start: a snapshot emptied in place is restored with the cp serve prints', async () => {
    const file = join(root, 'own-copy.json');
    const s = await DiskQuotaStore.open(file);
    for (let i = 0; i < 3; i++) s.take('key:h', basic, T0 + i, monthOf(T0));
    await s.close();
    expect(statSync(`${file}.bak`).ino).not.toBe(statSync(file).ino);
    expect(statSync(file).nlink).toBe(1);
    truncateSync(file, 0);
    const error = await DiskQuotaStore.open(file).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QuotaFileDamaged);
    expect((error as Error).message).toContain(`stop serve, then cp ${file}.bak ${file}`);
    copyFileSync(`${file}.bak`, file);
    const restored = await open(() => DiskQuotaStore.open(file));
    expect(restored.take('key:h', basic, T0 + 4, monthOf(T0))).toMatchObject({ ok: true, minuteUsed: 4, monthUsed: 4 });
  });

  it('a .bak that is another name for the snapshot (a crash mid-compaction, a start before it was a copy) is made a copy at start', async () => {
    const file = join(root, 'linked-copy.json');
    const s = await DiskQuotaStore.open(file);
    s.take('key:i', basic, T0, monthOf(T0));
    await s.close();
    rmSync(`${file}.bak`);
    linkSync(file, `${file}.bak`);
    const logs: string[] = [];
    const again = await open(() => DiskQuotaStore.open(file, { log: (m) => logs.push(m) }));
    expect(statSync(`${file}.bak`).ino).not.toBe(statSync(file).ino);
    expect(readFileSync(`${file}.bak`, 'utf8')).toBe(readFileSync(file, 'utf8'));
    expect(logs).toEqual([`quotas: ${file}.bak was another name for ${file}; it is now a copy of its own`]);
    expect(again.take('key:i', basic, T0 + 1, monthOf(T0))).toMatchObject({ ok: true, monthUsed: 2 });
  });

  it('a snapshot deleted beside its journals: the advice names the copy only when it is there', async () => {
    const file = join(root, 'deleted.json');
    const s = await DiskQuotaStore.open(file);
    s.take('key:j', basic, T0, monthOf(T0));
    await s.close();
    rmSync(file);
    const withCopy = await DiskQuotaStore.open(file).catch((e: unknown) => e);
    expect((withCopy as Error).message).toMatch(new RegExp(`^${file}: it is missing, but its journal ${file}\\.journal\\.1 is there\\. `));
    expect((withCopy as Error).message).toContain(`cp ${file}.bak ${file}`);
    rmSync(`${file}.bak`);
    const without = await DiskQuotaStore.open(file).catch((e: unknown) => e);
    expect(without).toBeInstanceOf(QuotaFileDamaged);
    expect((without as Error).message).not.toMatch(/\bcp /);
    expect((without as Error).message).toContain(
      `no copy of it can be restored (${file}.bak is not there): restore ${file} from a backup of your own, or start with ` +
        `serve --discard-damaged-quotas, which counts on from its journals alone (${file}.journal.1), without what the snapshot held before them`,
    );
    // So it does: the journal holds every count since the first start, and a new snapshot (with its copy) is written.
    const salvaged = await open(() => DiskQuotaStore.open(file, { discardDamaged: true }));
    expect(salvaged.take('key:j', basic, T0 + 1, monthOf(T0))).toMatchObject({ ok: true, monthUsed: 2 });
    expect(existsSync(file) && existsSync(`${file}.bak`)).toBe(true);
  });

  /** A journal of `frames` flushes, each of `per` requests of one credential: the disk store's own writing. */
  async function journalOf(file: string, frames: number, per: number): Promise<string> {
    const s = await DiskQuotaStore.open(file, { flushMs: 3_600_000 });
    const limits = { perMinute: 1e6, perMonth: 1e6 };
    for (let f = 0; f < frames; f++) {
      for (let i = 0; i < per; i++) s.take('key:k', limits, T0 + f * 1_000 + i, monthOf(T0));
      s.flush();
    }
    await s.close();
    return journalFile(file, 1);
  }
  const monthOfK = (file: string, o?: { salvage: boolean }) => readQuotaFile(file, o)!.counts.get('key:k')!.month;

  it('one damaged frame among 22: the salvage keeps the 21 others, and the refusal says so beforehand', async () => {
    const file = join(root, 'one-of-22.json');
    const journal = await journalOf(file, 22, 44);
    const bytes = readFileSync(journal);
    const first = bytes.readUInt32LE(MAGIC.length) + 8;
    bytes[MAGIC.length + 8 + 30] = bytes[MAGIC.length + 8 + 30]! ^ 0x01; // one bit of a record of frame 1
    writeFileSync(journal, bytes);
    const error = await DiskQuotaStore.open(file).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(new RegExp(`^${journal}: frame 1 fails its checksum\\. `));
    expect((error as Error).message).toContain(
      `serve --discard-damaged-quotas, which keeps the 21 journal frames that check and drops only frame 1 (${first} bytes from byte 19) of ${journal}`,
    );
    const logs: string[] = [];
    const salvaged = await open(() => DiskQuotaStore.open(file, { discardDamaged: true, log: (m) => logs.push(m) }));
    // Lost: frame 1's 44 requests, and nothing else.
    expect(salvaged.take('key:k', { perMinute: 1e6, perMonth: 1e6 }, T0 + 99_000, monthOf(T0)).monthUsed).toBe(21 * 44 + 1);
    expect(logs.join('\n')).toMatch(new RegExp(`dropped frame 1 \\(${first} bytes from byte 19\\) of .*moved aside: ${journal} -> `));
  });

  it('credentials counted in several frames, in changing order: any one frame lost, each other frame counts its own credentials', async () => {
    const file = join(root, 'frames-alone.json');
    const s = await DiskQuotaStore.open(file, { flushMs: 3_600_000 });
    const limits = { perMinute: 1e6, perMonth: 1e6 };
    const month = monthOf(T0);
    const take = (key: string, at: number) => s.take(`key:${key}`, limits, T0 + at, month);
    // Frame 1: a, b. Frame 2: b, c, a, c. Frame 3: c, a, and b's charge refunded.
    take('a', 0);
    take('b', 1);
    s.flush();
    for (const [i, key] of ['b', 'c', 'a', 'c'].entries()) take(key, 1_000 + i);
    s.flush();
    take('c', 2_000);
    take('a', 2_001);
    s.refund('key:b', month);
    await s.close();
    const journal = journalFile(file, 1);
    const whole = readFileSync(journal);
    const starts: number[] = [];
    for (let at = MAGIC.length; at < whole.length; at += 8 + whole.readUInt32LE(at)) starts.push(at);
    expect(starts).toHaveLength(3);
    const months = (o?: { salvage: boolean }) => {
      const counts = readQuotaFile(file, o)!.counts;
      return Object.fromEntries(['a', 'b', 'c'].map((k) => [k, counts.get(`key:${k}`)?.month ?? 0]));
    };
    expect(months()).toEqual({ a: 3, b: 1, c: 3 });
    const withoutFrame = [
      { a: 2, b: 0, c: 3 },
      { a: 2, b: 0, c: 1 },
      { a: 2, b: 2, c: 2 },
    ];
    for (const [i, expected] of withoutFrame.entries()) {
      const damaged = Buffer.from(whole);
      damaged[starts[i]! + 8 + 1] = damaged[starts[i]! + 8 + 1]! ^ 0x01; // a byte of the frame's first record
      writeFileSync(journal, damaged);
      expect(months({ salvage: true }), `frame ${i + 1} lost`).toEqual(expected);
    }
  });

  it('a damaged length: reading goes on at the next frame that checks, in the last journal too (never taken for a crash)', async () => {
    for (const [name, length] of [
      ['past-the-end', 0x7fff_ffff], // runs past the end of the journal, as an interrupted append would
      ['too-short', 40], // ends inside its own records
      ['zero', 0],
    ] as const) {
      const file = join(root, `length-${name}.json`);
      const journal = await journalOf(file, 6, 10);
      const bytes = readFileSync(journal);
      bytes.writeUInt32LE(length, MAGIC.length);
      writeFileSync(journal, bytes);
      const error = await DiskQuotaStore.open(file).catch((e: unknown) => e);
      expect(error, name).toBeInstanceOf(QuotaFileDamaged);
      expect((error as Error).message, name).toMatch(
        /which keeps the 5 journal frames that check and drops only frame 1 to the next frame that checks/,
      );
      expect(readFileSync(journal).equals(bytes), `${name}: the refusal leaves the journal as it was`).toBe(true);
      expect(monthOfK(file, { salvage: true }), name).toBe(50);
    }
  });

  it('a journal written before each frame named its credentials: records after the damage are dropped and counted, never given to another credential', async () => {
    const file = join(root, 'first-journal-format.json');
    const s = await DiskQuotaStore.open(file);
    await s.close();
    const define = (id: number, name: string) => Buffer.concat([Buffer.from([1]), u32(id), u16(name.length), Buffer.from(name)]);
    const request = (id: number, now: number) => Buffer.concat([Buffer.from([2]), u32(id), f64(now), f64(monthOf(T0).start)]);
    const frame = (...records: Buffer[]) => {
      const p = Buffer.concat(records);
      return Buffer.concat([u32(p.length), u32(crc32(p)), p]);
    };
    // Frame 1 names key:a number 0; a restart's first frame (2) gives number 0 to key:b; frame 3 counts number 0: key:b.
    const frames = [frame(define(0, 'key:a'), request(0, T0)), frame(define(0, 'key:b'), request(0, T0)), frame(request(0, T0 + 1))];
    writeFileSync(journalFile(file, 1), Buffer.concat([MAGIC, ...frames]));
    expect([...readQuotaFile(file)!.counts].map(([k, c]) => [k, c.month])).toEqual([
      ['key:a', 1],
      ['key:b', 2],
    ]);
    const damaged = Buffer.concat([MAGIC, frames[0]!, frames[1]!, frames[2]!]);
    damaged[MAGIC.length + frames[0]!.length + 12] = damaged[MAGIC.length + frames[0]!.length + 12]! ^ 0x01; // in frame 2
    writeFileSync(journalFile(file, 1), damaged);
    const error = await DiskQuotaStore.open(file).catch((e: unknown) => e);
    expect((error as Error).message).toContain(
      `drops only frame 2 (${frames[1]!.length} bytes from byte ${MAGIC.length + frames[0]!.length}) of ${journalFile(file, 1)}; 1 record of frame 3 of ${journalFile(file, 1)}`,
    );
    // Frame 3's record is key:b's; with frame 2 lost it is dropped, not counted for key:a.
    expect([...readQuotaFile(file, { salvage: true })!.counts].map(([k, c]) => [k, c.month])).toEqual([['key:a', 1]]);
  });

  it('a last frame cut short by a crash: the frames before it are kept, and the next save starts after them', async () => {
    const file = join(root, 'torn.json');
    const s = await DiskQuotaStore.open(file);
    s.take('key:e', basic, T0, monthOf(T0));
    await s.close();
    // A frame of 50 bytes of which a crash let 6 reach the disk.
    appendFileSync(journalFile(file, 1), Buffer.from([50, 0, 0, 0, 1, 2, 3, 4, 2, 0, 0, 0, 0, 0]));
    const logs: string[] = [];
    const again = await DiskQuotaStore.open(file, { log: (m) => logs.push(m) });
    expect(logs).toEqual([
      expect.stringMatching(/journal\.1: its last frame was cut short \(a crash while saving\); the ones before it are kept$/),
    ]);
    expect(again.take('key:e', basic, T0 + 1, monthOf(T0))).toMatchObject({ ok: true, minuteUsed: 2 });
    await again.close();
    expect(readQuotaFile(file)!.counts.get('key:e')).toMatchObject({ month: 2 });
  });

  it('reads a file of the first format (one document), keeps it beside as it was, and counts on', async () => {
    const file = join(root, 'first-format.json');
    const old = { schema: 1, credentials: { 'key:f': { minute: [T0 - 1_000], monthStart: monthOf(T0).start, month: 41 } } };
    writeFileSync(file, JSON.stringify(old));
    const s = await open(() => DiskQuotaStore.open(file));
    expect(s.take('key:f', basic, T0, monthOf(T0))).toMatchObject({ ok: true, minuteUsed: 2, monthUsed: 42 });
    expect(JSON.parse(readFileSync(`${file}.schema-1`, 'utf8'))).toEqual(old);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ schema: 2, journal: 1 });
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
        url: (path: string) => `http://127.0.0.1:${port}${path}`,
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
      // Billing reads the file while serve runs (decision 38): within a second the month shows all five, and serve
      // keeps its lock and goes on answering.
      const lock = readFileSync(`${quotas}.lock`, 'utf8');
      const billed = async () => {
        const r = await cliAsync(['usage', '--quotas', quotas, '--keys', KEYS_FILE, '--json']);
        expect(r.status, r.stderr).toBe(0);
        return (JSON.parse(r.stdout) as { plan: string; requests: number }[]).find((row) => row.plan === 'basic')!.requests;
      };
      expect(await until(async () => (await billed()) === 5, 5_000, 200)).toBe(true);
      expect(readFileSync(`${quotas}.lock`, 'utf8')).toBe(lock);
      expect(JSON.parse(lock).pid).toBe(second.child.pid);
      // Its minute spent, the key's own standing is refused too (it counts toward the minute); serve answers on.
      expect((await second.get('/v1/usage')).status).toBe(429);
      expect((await fetch(second.url('/v1/health'))).status).toBe(200);
    } finally {
      second.child.kill('SIGTERM');
    }
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
