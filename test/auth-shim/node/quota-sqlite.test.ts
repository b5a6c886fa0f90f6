/**
 * The Node server's own store (decision 97): one SQLite database. Counts survive a restart, SIGTERM loses none, kill -9
 * loses at most the last second's and never bills one twice, damage is refused by name and never read as empty, one
 * process counts in a database at a time, and a quota file of the releases before is imported exactly.
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { basename, join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { readLegacyQuotaFile } from '../../../auth-shim/node/quota-import.js';
import { QuotaStoreDamaged, QuotaStoreHeld, QuotaStoreUnwritable, SqliteQuotaStore } from '../../../auth-shim/node/quota-sqlite.js';
import { SqliteWebhookStore } from '../../../auth-shim/node/webhooks-sqlite.js';
import { sampleEndpoint } from '../webhooks/endpoint.js';
import { monthTotals } from '../../../auth-shim/node/quota-totals.js';
import { monthName, monthOf, monthsAfter, MONTHS_KEPT, monthTotal } from '../../../auth-shim/quota.js';
import { PLAN_LIMITS } from '../../../generator/contract/plans.js';
import { cliAsync, ROOT, tempDir, until } from '../../helpers.js';
import { freePort } from '../../services.js';
import { KEY, KEYS_FILE, builtTree } from '../tree.js';
import { load, manyKeys, serve, stopped } from './serve-load.js';

const root = tempDir('rr-sqlite-');
const manyKeysIn = (n: number) => manyKeys(n, root);
const basic = PLAN_LIMITS.basic;
const T0 = Date.now();
const month = monthOf(T0);
const opened: SqliteQuotaStore[] = [];
const open = async (file: string, o: Parameters<typeof SqliteQuotaStore.open>[1] = {}) => {
  const s = await SqliteQuotaStore.open(file, o);
  opened.push(s);
  return s;
};
afterAll(async () => {
  for (const s of opened) await s.close().catch(() => {});
});
const fresh = (name: string) => join(root, `${name}-${randomBytes(3).toString('hex')}.sqlite`);
const totalOf = async (file: string, credential: string, m = month) => (await monthTotals(file, m)).get(credential) ?? 0;

describe('the SQLite store: counts that survive', () => {
  it('a restart in the middle of a window keeps the minute and the month', async () => {
    const file = fresh('restart');
    const a = await SqliteQuotaStore.open(file);
    for (let i = 0; i < 3; i++) expect(a.take('k', basic, T0 + i, month).ok).toBe(true);
    await a.close();
    const b = await open(file);
    expect(b.take('k', basic, T0 + 10, month)).toMatchObject({ ok: true, remaining: 1, monthUsed: 4 });
    expect(b.take('k', basic, T0 + 11, month).ok).toBe(true);
    expect(b.take('k', basic, T0 + 12, month)).toMatchObject({ ok: false, code: 'rate_limited' });
  });

  it('writes what changed within a second, without a close, and billing reads it while the store holds the database', async () => {
    const file = fresh('flush');
    const s = await open(file, { flushMs: 200 });
    s.take('k', basic, T0, month);
    expect(await until(async () => (await totalOf(file, 'k')) === 1)).toBe(true);
    await s.flush();
    // The operator's own view: plain tables, readable with sqlite3 while serve runs; the request counted in its
    // month's row and logged with its time (for the minute) among the charges.
    const db = new DatabaseSync(file, { readOnly: true });
    expect(db.prepare('SELECT month, requests FROM months WHERE credential = ?').all('k')).toEqual([
      { month: monthName(month.start), requests: 1 },
    ]);
    expect(db.prepare(`SELECT j.value AS charge FROM charges, json_each(charges.charges) j`).all()).toEqual([{ charge: `["k",${T0}]` }]);
    db.close();
  });

  it('a charges row the months rows do not count yet outlives its minute, until a fold counts it', async () => {
    const file = fresh('unfolded');
    const s = await open(file, { flushMs: 3_600_000 });
    s.take('k', basic, T0, month);
    await s.flush(true); // the months row counts this one
    s.take('k', basic, T0 + 1, month);
    s.take('k', basic, T0 + 2, month);
    await s.flush(false); // these two are in a charges row alone
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.now() + 2 * 60_000);
      await s.flush(false); // a crash after it: the two must still be there to read
      expect(await totalOf(file, 'k')).toBe(3);
      await s.flush(true);
      await s.flush(false);
      expect(await totalOf(file, 'k')).toBe(3);
      const db = new DatabaseSync(file, { readOnly: true });
      expect(db.prepare('SELECT count(*) AS n FROM charges').get()).toEqual({ n: 0 }); // nothing left to grow
      db.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it('a fold writes the months rows of what was counted while the save ran, too', async () => {
    const file = fresh('during');
    const s = await open(file, { flushMs: 3_600_000 });
    s.take('a', basic, T0, month);
    const saving = s.flush(true); // logs a's row, then lets requests in before it folds
    s.take('b', basic, T0 + 1, month);
    await saving;
    const db = new DatabaseSync(file, { readOnly: true });
    expect(db.prepare('SELECT credential, requests FROM months ORDER BY credential').all()).toEqual([
      { credential: 'a', requests: 1 },
      { credential: 'b', requests: 1 },
    ]);
    db.close();
  });

  it('a fold of many credentials lets requests in between its slices; one failing part-way leaves them all behind', async () => {
    const file = fresh('slices');
    const s = await open(file, { flushMs: 3_600_000 });
    const limits = { perMinute: 10, perMonth: 100 };
    for (let i = 0; i < 5_000; i++) s.take(`k${i}`, limits, T0, month); // three slices, in key order: k999 is last
    await s.flush(false); // the charges logged, no months row yet
    const db = new DatabaseSync(file);
    db.exec(`CREATE TRIGGER refuse BEFORE INSERT ON months WHEN NEW.credential = 'k999' BEGIN SELECT RAISE(ABORT, 'disk full'); END`);
    const rows = () => db.prepare('SELECT count(*) AS n FROM months').get()!.n;
    const folding = s.flush(true);
    let between: unknown;
    setImmediate(() => {
      between = rows(); // two slices in, the event loop free
      s.take('k1', limits, T0 + 1, month); // counted after its slice: behind for the next fold
    });
    await folding;
    expect(between).toBe(4_000);
    expect(rows()).toBe(4_000); // the third slice refused
    // The database as a crash between two slices leaves it reads exact: each of the 5,000 counted once (k1's second
    // request, refused with the third slice, is in memory still).
    const billed = await monthTotals(file, month);
    expect([billed.size, [...billed.values()].every((n) => n === 1)]).toEqual([5_000, true]);
    db.exec('DROP TRIGGER refuse');
    await s.flush(true);
    expect(rows()).toBe(5_000);
    expect(db.prepare(`SELECT sum(requests) AS n FROM months`).get()).toEqual({ n: 5_001 });
    expect(db.prepare(`SELECT requests FROM months WHERE credential = 'k1'`).get()).toEqual({ requests: 2 });
    db.close();
  });

  it('keeps thirteen months before the current one and drops older ones when it opens', async () => {
    const file = fresh('months');
    const s = await SqliteQuotaStore.open(file);
    const old = monthsAfter(month.start, -(MONTHS_KEPT + 1));
    const kept = monthsAfter(month.start, -MONTHS_KEPT);
    for (const start of [old, kept, month.start])
      s.take('k', { perMinute: 100, perMonth: 100 }, start + 1_000, { start, end: monthsAfter(start, 1) });
    await s.close();
    await (await SqliteQuotaStore.open(file)).close();
    const db = new DatabaseSync(file, { readOnly: true });
    expect(
      db
        .prepare('SELECT month FROM months ORDER BY month')
        .all()
        .map((r) => r.month),
    ).toEqual([monthName(kept), monthName(month.start)]);
    db.close();
  });

  it('one process counts in a database: a second waits for the first to let go (a rolling restart), then counts on', async () => {
    const file = fresh('rolling');
    const a = await SqliteQuotaStore.open(file);
    for (let i = 0; i < 3; i++) a.take('k', basic, T0 + i, month);
    let b: SqliteQuotaStore | undefined;
    const said: string[] = [];
    const waiting = SqliteQuotaStore.open(file, { waitMs: 60_000, log: (m) => said.push(m) }).then((s) => (b = s));
    await new Promise((r) => setTimeout(r, 300));
    expect(b).toBeUndefined();
    await a.close();
    opened.push(await waiting);
    // The wait is said once, as it starts, naming who holds the database.
    expect(said).toEqual([
      expect.stringMatching(
        new RegExp(
          `^quotas: ${file}\\.lock: another process counts in this quota database \\(pid ${process.pid} .*; waiting up to 60 s \\(--quotas-wait\\) for it to let go$`,
        ),
      ),
    ]);
    expect(b!.take('k', basic, T0 + 10, month)).toMatchObject({ ok: true, remaining: 1 });
  });

  it('a symlink to a database another process counts in is the same database: refused, never counted twice', async () => {
    const file = fresh('linked');
    const link = join(root, `link-${randomBytes(3).toString('hex')}.sqlite`);
    symlinkSync(file, link);
    const first = await open(file);
    const second = await SqliteQuotaStore.open(link, { waitMs: 300 }).catch((e: unknown) => e);
    expect(second).toBeInstanceOf(QuotaStoreHeld);
    expect((second as Error).message).toMatch(/another process counts in this quota database/);
    await first.close();
    expect(existsSync(`${link}.id`)).toBe(false); // the files beside are the real file's
  });

  it('a hard link to a database another process counts in is refused too; a copy of it is another database', async () => {
    const file = fresh('hard');
    const hard = join(root, `hard-${randomBytes(3).toString('hex')}.sqlite`);
    const first = await open(file);
    // SQLite itself refuses a second name while the first's WAL holds pages (a short read); with it folded, it lets in.
    first.db.prepare('PRAGMA wal_checkpoint(TRUNCATE)').get();
    linkSync(file, hard);
    const second = await SqliteQuotaStore.open(hard, { waitMs: 300 }).catch((e: unknown) => e);
    expect(second).toBeInstanceOf(QuotaStoreHeld);
    expect((second as Error).message).toMatch(
      new RegExp(
        `^${hard}: another process counts in this quota database, through another name of it \\(a hard link\\) \\(pid ${process.pid} `,
      ),
    );
    // A copy (another file) taken while it counts opens, though it carries the same row.
    copyFileSync(file, `${file}.copy`);
    await (await SqliteQuotaStore.open(`${file}.copy`)).close();
    await first.close();
    // Let go: the second name opens now.
    await (await SqliteQuotaStore.open(hard)).close();
  });

  it("SQLite's write lock held at the start (a sqlite3 shell) is waited for, then named; the database is never taken for damage", async () => {
    const file = fresh('start-locked');
    await (await SqliteQuotaStore.open(file)).close();
    const holder = new DatabaseSync(file);
    holder.exec('BEGIN IMMEDIATE');
    const started = Date.now();
    const refused = await SqliteQuotaStore.open(file, { waitMs: 500, discardDamaged: true }).catch((e: unknown) => e);
    // --quotas-wait bounds SQLite's own wait too (its 5 s would otherwise run past a 0.5 s wait).
    expect(Date.now() - started).toBeLessThan(4_500);
    holder.exec('ROLLBACK');
    expect(refused).toBeInstanceOf(QuotaStoreHeld);
    expect((refused as Error).message).toMatch(
      new RegExp(`^${file}: another process holds the quota database's write lock .*waited 0.5 s`),
    );
    expect(readdirSync(root).filter((n) => n.startsWith(`${file.split('/').pop()}.damaged-`))).toEqual([]);
    expect(existsSync(`${file}.lock`)).toBe(false);
    // A reader shut out too (an exclusive lock) gets usage's "try again", not damage.
    holder.exec('PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE');
    const unread = await cliAsync(['usage', '--quotas', file, '--keys', KEYS_FILE]);
    holder.exec('ROLLBACK');
    holder.close();
    expect(unread.status).toBe(1);
    expect(unread.stderr).toMatch(/another process holds the quota database's lock .*try again/);
    await (await SqliteQuotaStore.open(file)).close();
  });

  it('a second process the first never lets go of is refused, naming the file, the holder and what to use instead', async () => {
    const file = fresh('held');
    await open(file);
    const error = await SqliteQuotaStore.open(file, { waitMs: 200 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QuotaStoreHeld);
    expect((error as Error).message).toMatch(
      new RegExp(`^${file}\\.lock: another process counts in this quota database \\(pid ${process.pid} `),
    );
    expect((error as Error).message).toContain('--quotas redis://HOST:PORT');
  });
});

describe('the SQLite store: a month is its row plus the charges after it', () => {
  /** A database as a crash leaves it: a months row written through charges row `through`, and the charges rows. */
  function crashed(name: string, through: number, rows: unknown[][], saved = T0): string {
    const file = fresh(name);
    const db = new DatabaseSync(file);
    db.exec(`CREATE TABLE months (credential TEXT NOT NULL, month TEXT NOT NULL, requests INTEGER NOT NULL,
      through INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (credential, month)) WITHOUT ROWID;
      CREATE TABLE charges (id INTEGER PRIMARY KEY AUTOINCREMENT, saved INTEGER NOT NULL, charges TEXT NOT NULL);
      CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;`);
    db.prepare('INSERT INTO months VALUES (?, ?, ?, ?)').run('k', monthName(month.start), 3, through);
    for (const row of rows) db.prepare('INSERT INTO charges (saved, charges) VALUES (?, ?)').run(saved, JSON.stringify(row));
    db.close();
    return file;
  }

  it("counts each charge once: those at or before the row's `through` are in it, those after are added", async () => {
    // Row 1 holds the three requests the months row counts; row 2 two more and a refund; row 3 one more.
    const file = crashed('through', 1, [
      [
        ['k', T0],
        ['k', T0 + 1],
        ['k', T0 + 2],
      ],
      [
        ['k', T0 + 3],
        ['k', T0 + 4, 'minute'],
        ['k', month.start, 'refund'],
        ['k', T0 + 5],
      ],
      [['k', T0 + 6]],
    ]);
    expect(await totalOf(file, 'k')).toBe(3 + 2 - 1 + 1);
    const s = await open(file);
    // The minute holds all seven requests (basic admits five a minute), whatever the month counted.
    expect(s.take('k', { perMinute: 8, perMonth: 100 }, T0 + 10, month)).toMatchObject({ ok: true, minuteUsed: 8, monthUsed: 6 });
    await s.close();
    const db = new DatabaseSync(file, { readOnly: true });
    expect(db.prepare('SELECT requests FROM months WHERE credential = ?').get('k')).toEqual({ requests: 6 });
    db.close();
    expect(await totalOf(file, 'k')).toBe(6);
  });

  it('a save that fails (charges or months) keeps every charge and changed row for the next, and says so once', async () => {
    const file = fresh('refused');
    const said: string[] = [];
    const s = await open(file, { flushMs: 3_600_000, log: (m) => said.push(m) });
    // Writes refused while `refuse` names a table: what a full disk or a read-only file does to a save.
    const db = new DatabaseSync(file);
    db.exec(`CREATE TABLE refuse (name TEXT);
      CREATE TRIGGER refuse_charges BEFORE INSERT ON charges WHEN EXISTS (SELECT 1 FROM refuse WHERE name = 'charges')
        BEGIN SELECT RAISE(ABORT, 'disk full'); END;
      CREATE TRIGGER refuse_months BEFORE INSERT ON months WHEN EXISTS (SELECT 1 FROM refuse WHERE name = 'months')
        BEGIN SELECT RAISE(ABORT, 'disk full'); END;`);
    const limits = { perMinute: 10_000, perMonth: 100_000 };
    db.exec(`INSERT INTO refuse VALUES ('charges')`);
    for (let i = 0; i < 5_000; i++) s.take(`k${i % 700}`, limits, T0 + i, month);
    await s.flush(true);
    db.exec(`DELETE FROM refuse; INSERT INTO refuse VALUES ('months')`);
    for (let i = 0; i < 300; i++) s.take(`k${i % 700}`, limits, T0 + 5_000 + i, month);
    await s.flush(true); // the charges are logged; the months rows, refused, stay behind
    db.exec('DELETE FROM refuse');
    db.close();
    expect(said).toEqual([expect.stringMatching(new RegExp(`^quotas: cannot save to ${file} \\(disk full\\); the counts are kept`))]);
    expect(await totalOf(file, 'k0')).toBe(9);
    await s.close();
    const after = new DatabaseSync(file, { readOnly: true });
    expect(after.prepare(`SELECT count(*) AS n, sum(requests) AS sum FROM months`).get()).toEqual({ n: 700, sum: 5_300 });
    after.close();
    expect(await totalOf(file, 'k0')).toBe(9);
  });

  it("another process's write lock fails a save at once (no 5 s stall); a stop it outlasts keeps the charges beside", async () => {
    const file = fresh('locked');
    const said: string[] = [];
    const s = await SqliteQuotaStore.open(file, { flushMs: 3_600_000, log: (m) => said.push(m) });
    for (let i = 0; i < 30; i++) s.take(`k${i % 3}`, { perMinute: 100, perMonth: 100 }, T0 + i, month);
    const holder = new DatabaseSync(file);
    holder.exec('BEGIN IMMEDIATE');
    const began = performance.now();
    await s.flush();
    // SQLite's own wait (5 s at open) would hold every request of the server; the save fails and is kept instead.
    expect(performance.now() - began).toBeLessThan(2_000);
    expect(said[0]).toMatch(/cannot save to .* \(database is locked\); the counts are kept in memory/);
    const closing = await s.close().catch((e: unknown) => e);
    holder.exec('ROLLBACK');
    holder.close();
    expect(closing).toBeInstanceOf(QuotaStoreUnwritable);
    const unsaved = (closing as Error).message.match(/they are kept in (\S+\.unsaved-\S+\.json), which the next start/)?.[1];
    expect(existsSync(unsaved!)).toBe(true);
    expect(await totalOf(file, 'k0')).toBe(10); // usage counts the file meanwhile
    // The next start takes them in once: the file goes, and a start after that counts them once.
    const logged: string[] = [];
    await (await SqliteQuotaStore.open(file, { log: (m) => logged.push(m) })).close();
    expect(logged).toEqual([`quotas: took in 30 charges a stop could not save, from ${unsaved}`]);
    expect(existsSync(unsaved!)).toBe(false);
    await (await SqliteQuotaStore.open(file)).close();
    expect(await totalOf(file, 'k0')).toBe(10);
  });

  it('a database that cannot be opened is named as such, not as damage that --discard-damaged-quotas would set aside', async () => {
    const file = fresh('directory');
    mkdirSync(file);
    for (const attempt of [() => SqliteQuotaStore.open(file, { discardDamaged: true }), () => monthTotals(file, month)]) {
      const error = await attempt().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(QuotaStoreUnwritable);
      expect((error as Error).message).toMatch(new RegExp(`^${file}: the quota database cannot be opened or written there`));
    }
    expect(statSync(file).isDirectory()).toBe(true);
  });

  it('a database removed or replaced under a running store is written again from the one it has open, nothing lost', async () => {
    const file = fresh('removed');
    const said: string[] = [];
    const s = await SqliteQuotaStore.open(file, { flushMs: 3_600_000, log: (m) => said.push(m) });
    const endpoints = new SqliteWebhookStore(s);
    const limits = { perMinute: 100, perMonth: 100 };
    for (let i = 0; i < 5; i++) s.take('k', limits, T0 + i, month);
    await endpoints.add(sampleEndpoint({ id: 'ep_kept' }), 5);
    await s.flush(true);
    for (const f of [file, `${file}-wal`, `${file}-shm`, `${file}.id`]) rmSync(f, { force: true });
    for (let i = 5; i < 8; i++) s.take('k', limits, T0 + i, month);
    await s.flush();
    expect(said.join('\n')).toMatch(/was removed while serve ran; written again from the database serve had open, nothing lost/);
    expect(await totalOf(file, 'k')).toBe(8); // usage reads it again, witness and all
    // The database file alone removed (`rm FILE`): its -wal and -shm, left behind, are moved aside and said to be.
    rmSync(file);
    s.take('k', limits, T0 + 8, month);
    await s.flush();
    expect(said.join('\n')).toMatch(/was removed \(its -wal and -shm, left behind, are in \S+\.replaced-[^)]+\) while serve ran; written/);
    expect(said.join('\n')).not.toMatch(/was replaced/);
    // Replaced by another file (a copy moved into place while serving): that one is moved aside, the live counts kept.
    writeFileSync(`${file}.other`, 'not ours');
    renameSync(`${file}.other`, file);
    s.take('k', limits, T0 + 9, month);
    await s.close();
    expect(said.join('\n')).toMatch(/was replaced \(what was there is in \S+\.replaced-[^)]+\) while serve ran/);
    expect(await totalOf(file, 'k')).toBe(10);
    const reopened = await SqliteQuotaStore.open(file);
    expect((await new SqliteWebhookStore(reopened).get('ep_kept'))?.id).toBe('ep_kept');
    await reopened.close();
  });

  /** A store counting in a new database, `n` requests of `k` saved, its log in `said`. */
  async function saved(name: string, n: number) {
    const file = fresh(name);
    const said: string[] = [];
    const s = await SqliteQuotaStore.open(file, { flushMs: 3_600_000, log: (m) => said.push(m) });
    for (let i = 0; i < n; i++) s.take('k', limits, T0 + i, month);
    await s.flush(true);
    return { file, said, s };
  }
  const limits = { perMinute: 100, perMonth: 100 };

  it('a database emptied in place under a running store (truncate -s 0) is written again, or its saves fail aloud', async () => {
    const { file, said, s } = await saved('emptied', 5);
    truncateSync(file, 0);
    s.take('k', limits, T0 + 5, month);
    await s.close();
    // Small enough that every page is still in the -wal or the cache: nothing lost. A larger one fails its saves,
    // logged, and its stop keeps the charges beside it (exit 3), as any database it cannot write.
    expect(said.join('\n')).toMatch(/was emptied \(the empty file is in \S+\.replaced-[^)]+\) while serve ran; written again/);
    expect(await totalOf(file, 'k')).toBe(6);
  });

  it('a -wal removed under a running store is folded in first; a folder moved away takes the counts with it', async () => {
    const { file, said, s } = await saved('wal-removed', 4);
    rmSync(`${file}-wal`);
    s.take('k', limits, T0 + 4, month);
    await s.flush(true);
    expect(said.join('\n')).toMatch(/-wal was removed while serve ran; its pages were folded into the database first, nothing lost/);
    expect(await totalOf(file, 'k')).toBe(5); // read beside the running store, before any stop
    await s.close();
    // A tree renamed while served: the folder is gone, and the counts go on in the file, where it went.
    const folder = join(root, `moving-${randomBytes(3).toString('hex')}`);
    mkdirSync(folder);
    const inFolder = join(folder, 'quotas.sqlite');
    const t = await SqliteQuotaStore.open(inFolder, { flushMs: 3_600_000, log: (m) => said.push(m) });
    t.take('k', limits, T0, month);
    renameSync(folder, `${folder}-moved`);
    t.take('k', limits, T0 + 1, month);
    await t.close();
    expect(said.at(-1)).toBe(`quotas: the folder of ${inFolder} is gone; counting on in the database serve has open`);
    expect(await totalOf(join(`${folder}-moved`, 'quotas.sqlite'), 'k')).toBe(2);
  });

  it('a start brings the months rows up to the charges, and the charges a minute old go: nothing left to grow', async () => {
    const file = crashed('caught-up', 0, [[['k', month.start]], [['k', month.start + 1]]], T0 - 90_000);
    await (await SqliteQuotaStore.open(file)).close();
    const db = new DatabaseSync(file, { readOnly: true });
    expect(db.prepare('SELECT requests FROM months WHERE credential = ?').get('k')).toEqual({ requests: 5 });
    expect(db.prepare('SELECT count(*) AS n FROM charges').get()).toEqual({ n: 0 });
    db.close();
  });

  it.each([
    ['not JSON', '[["k", 1', /charges row 1 is not JSON/],
    ['not charges', '[["k", "yesterday"]]', /charges row 1 holds something that is not a charge/],
  ])('a charges row that is %s is refused, naming the file and the row; it is not read as no charges', async (_name, text, said) => {
    const file = crashed('not-json', 0, []);
    const db = new DatabaseSync(file);
    db.prepare('INSERT INTO charges (saved, charges) VALUES (?, ?)').run(T0, text);
    db.close();
    const error = await SqliteQuotaStore.open(file).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QuotaStoreDamaged);
    expect((error as Error).message).toMatch(new RegExp(`^${file}: ${said.source}.*--discard-damaged-quotas`));
    await expect(monthTotals(file, month)).rejects.toThrow(said);
  });

  it('--discard-damaged-quotas reads past a charges row that does not read, up to it, where the check alone finds no damage', async () => {
    const file = crashed('salvage-row', 0, [[['k', T0]]]);
    const db = new DatabaseSync(file);
    db.prepare('INSERT INTO charges (saved, charges) VALUES (?, ?)').run(T0, '[["k", 1');
    db.close();
    const said: string[] = [];
    await (await SqliteQuotaStore.open(file, { discardDamaged: true, log: (m) => said.push(m) })).close();
    expect(said.join('\n')).toMatch(
      /reading the counts stopped at the damage \(.*charges row 2 is not JSON.*\n.*counting on from the 1 credentials/,
    );
    expect(said[0]).not.toMatch(/--discard-damaged-quotas/); // the salvage is the way on: not offered again
    expect(await totalOf(file, 'k')).toBe(4); // the months row's 3 and the charge of the row before the damage
  });

  it('a save the disk has no room for says so, and keeps the counts', async () => {
    const said: string[] = [];
    const s = await open(fresh('full'), { flushMs: 3_600_000, log: (m) => said.push(m) });
    // The database may not grow: SQLite answers as a full disk does, and rolls the transaction back itself.
    s.db.exec(`PRAGMA max_page_count = ${Number(s.db.prepare('PRAGMA page_count').get()!.page_count)}`);
    for (let i = 0; i < 2_000; i++) s.take(`key:${'f'.repeat(60)}${i}`, basic, T0, month);
    await s.flush(true);
    expect(said).toEqual([expect.stringMatching(/cannot save to .* \(database or disk is full\); the counts are kept in memory/)]);
    s.db.exec('PRAGMA max_page_count = 1073741823');
    await s.flush(true);
    expect(await totalOf(s.file, `key:${'f'.repeat(60)}1999`)).toBe(1);
  });

  it('a database of the first release (a row per request in `minutes`) is read by usage as it is, and taken on by serve', async () => {
    const file = fresh('schema-1');
    const db = new DatabaseSync(file);
    db.exec(`CREATE TABLE months (credential TEXT NOT NULL, month TEXT NOT NULL, requests INTEGER NOT NULL,
      PRIMARY KEY (credential, month)) WITHOUT ROWID;
      CREATE TABLE minutes (credential TEXT NOT NULL, at INTEGER NOT NULL);
      CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;`);
    db.prepare('INSERT INTO months VALUES (?, ?, ?)').run('k', monthName(month.start), 40);
    for (let i = 0; i < 4; i++) db.prepare('INSERT INTO minutes VALUES (?, ?)').run('k', Date.now() - 1_000 + i);
    db.close();
    expect(await totalOf(file, 'k')).toBe(40);
    const s = await open(file);
    expect(s.take('k', basic, Date.now(), month)).toMatchObject({ ok: true, minuteUsed: 5, monthUsed: 41 });
    expect(s.take('k', basic, Date.now(), month)).toMatchObject({ ok: false, code: 'rate_limited' });
    await s.close();
    expect(await totalOf(file, 'k')).toBe(41);
  });
});

describe('the SQLite store: damage is named, never read as empty', () => {
  /** A database that held a count for `key:g`, closed. */
  async function held(name: string): Promise<string> {
    const file = fresh(name);
    const s = await SqliteQuotaStore.open(file);
    s.take('key:g', basic, T0, month);
    await s.close();
    return file;
  }
  const damages: [string, (file: string) => void, RegExp][] = [
    ['deleted', (f) => rmSync(f), /the quota database is gone, but .*\.id says it held the counts of database [0-9a-f-]{36}/],
    ['emptied', (f) => truncateSync(f, 0), /the quota database is empty, but .*\.id says it held the counts/],
    ['cut short', (f) => truncateSync(f, 4096 + 100), /the quota database fails its check/],
    [
      'overwritten in its pages',
      (f) => {
        const bytes = readFileSync(f);
        bytes.fill(0x5a, 4096, bytes.length);
        writeFileSync(f, bytes);
      },
      /the quota database fails its check/,
    ],
    ['overwritten in its header', (f) => writeFileSync(f, Buffer.alloc(8192, 7)), /the quota database fails its check/],
  ];

  it.each(damages)('%s: the store refuses to open, naming the file and the way on', async (_name, damage, said) => {
    const file = await held('damaged');
    damage(file);
    const error = await SqliteQuotaStore.open(file).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QuotaStoreDamaged);
    expect((error as Error).message).toMatch(said);
    expect((error as Error).message).toMatch(new RegExp(`^${file}: .*restore it from a copy.*--discard-damaged-quotas`));
    expect(existsSync(`${file}.lock`)).toBe(false);
  });

  it('usage on a database gone while its witness stays exits 3 naming the witness; on an empty file with none, bills nothing', async () => {
    const file = await held('usage-gone');
    rmSync(file);
    const gone = await cliAsync(['usage', '--quotas', file, '--keys', KEYS_FILE]);
    expect(gone.status).toBe(3);
    expect(gone.stderr).toMatch(new RegExp(`^risk-readings usage: ${file}: the quota database is gone, but ${file}\\.id says`));
    const empty = fresh('usage-empty');
    writeFileSync(empty, '');
    const none = await cliAsync(['usage', '--quotas', empty, '--keys', KEYS_FILE, '--json']);
    expect(none.status, none.stderr).toBe(0);
    expect((JSON.parse(none.stdout) as { requests: number }[]).every((row) => row.requests === 0)).toBe(true);
  });

  it('a database it makes is readable by its owner alone (it holds webhook secrets)', async () => {
    const file = await held('mode');
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it("--discard-damaged-quotas with a stop's unsaved charges beside counts each of them once", async () => {
    const file = await held('salvage-unsaved');
    writeFileSync(
      `${file}.unsaved-2026-12-02T00-00-00-000Z.json`,
      JSON.stringify([
        ['key:g', T0 + 5],
        ['key:g', T0 + 6],
      ]),
    );
    // Every row still reads, but the witness names another database: damage, which the salvage reads past.
    writeFileSync(`${file}.id`, JSON.stringify({ database: '00000000-0000-0000-0000-000000000000' }));
    const said: string[] = [];
    await (await SqliteQuotaStore.open(file, { discardDamaged: true, log: (m) => said.push(m) })).close();
    expect(said.join('\n')).toMatch(/counting on from the 1 credentials that still read.*\n.*took in 2 charges a stop could not save/);
    expect(await totalOf(file, 'key:g')).toBe(3);
  });

  it('a witness that does not read is damage too, for the store and usage; the salvage counts on', async () => {
    const file = await held('garbled-witness');
    writeFileSync(`${file}.id`, 'not json {');
    const said = new RegExp(
      `^${file}\\.id: the quota database's witness does not read \\(it is not JSON\\); it says which database the counts`,
    );
    await expect(SqliteQuotaStore.open(file)).rejects.toThrow(said);
    const billed = await cliAsync(['usage', '--quotas', file, '--keys', KEYS_FILE]);
    expect(billed.status).toBe(3);
    expect(billed.stderr.replace('risk-readings usage: ', '')).toMatch(said);
    // One that names its database but no row a save could have written (a hand edit) checks nothing either.
    const id = await held('witness-saved');
    const w = JSON.parse(readFileSync(`${id}.id`, 'utf8')) as Record<string, unknown>;
    writeFileSync(`${id}.id`, JSON.stringify({ ...w, saved: 'abc' }));
    await expect(SqliteQuotaStore.open(id)).rejects.toThrow(/witness names no row saved/);
    await (await SqliteQuotaStore.open(file, { discardDamaged: true })).close();
    expect(await totalOf(file, 'key:g')).toBe(1);
  });

  it("a crash's -wal left without its database is refused, not emptied by a new database", async () => {
    const s = await open(fresh('orphaning'), { flushMs: 3_600_000 });
    s.take('key:g', basic, T0, month);
    await s.flush(true);
    const file = fresh('orphaned');
    copyFileSync(`${s.file}-wal`, `${file}-wal`); // the database and its witness moved away, the -wal left
    const wal = readFileSync(`${file}-wal`);
    expect(wal.length).toBeGreaterThan(0);
    await expect(SqliteQuotaStore.open(file)).rejects.toThrow(
      new RegExp(`^${file}: the quota database is gone, but ${file}-wal beside it holds counts of it; move the -wal and -shm`),
    );
    expect(readFileSync(`${file}-wal`).equals(wal)).toBe(true);
    expect(existsSync(file)).toBe(false);
  });

  it('a start that refuses a damaged database leaves it as it was, the -wal of a crash included', async () => {
    const s = await open(fresh('crashing'), { flushMs: 3_600_000 });
    for (let i = 0; i < 50; i++) s.take(`key:${i}`, basic, T0, month);
    await s.flush(true);
    s.db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    for (let i = 0; i < 50; i++) s.take(`key:${i}`, basic, T0 + 1, month);
    await s.flush(true); // these in the -wal alone, as a kill -9 leaves them
    const file = fresh('crashed');
    for (const end of ['', '-wal', '.id']) copyFileSync(`${s.file}${end}`, `${file}${end}`);
    const bytes = readFileSync(file);
    bytes.fill(0x5a, bytes.length - 4096 + 8, bytes.length); // a page of the file overwritten
    writeFileSync(file, bytes);
    const [db, wal] = [readFileSync(file), readFileSync(`${file}-wal`)];
    expect(wal.length).toBeGreaterThan(0);
    await expect(SqliteQuotaStore.open(file)).rejects.toThrow(QuotaStoreDamaged);
    expect(readFileSync(file).equals(db)).toBe(true);
    expect(readFileSync(`${file}-wal`).equals(wal)).toBe(true);
  });

  it('--discard-damaged-quotas keeps the webhook endpoints and attempts beside the counts', async () => {
    const file = fresh('salvage-webhooks');
    const s = await SqliteQuotaStore.open(file);
    const endpoint = sampleEndpoint({ id: 'ep_kept' });
    const attempt = { message_id: 'm1', attempt: 1, at: '2026-12-01T00:00:00.000Z', status: 200, error: null, ms: 5 };
    await new SqliteWebhookStore(s).add(endpoint, 5);
    await new SqliteWebhookStore(s).logAttempt('ep_kept', attempt);
    s.take('key:g', basic, T0, month);
    await s.close();
    writeFileSync(`${file}.id`, JSON.stringify({ database: '00000000-0000-0000-0000-000000000000' })); // damage
    const said: string[] = [];
    const salvaged = await open(file, { discardDamaged: true, log: (m) => said.push(m) });
    expect(said.join('\n')).toMatch(
      /counting on from the 1 credentials that still read, with 1 row of webhook_endpoints, 1 row of webhook_attempts;/,
    );
    const endpoints = new SqliteWebhookStore(salvaged);
    expect(await endpoints.get('ep_kept')).toEqual(endpoint);
    expect(await endpoints.attempts('ep_kept')).toEqual([attempt]);
    expect(salvaged.take('key:g', basic, T0 + 1, month).monthUsed).toBe(2);
  });

  it('--discard-damaged-quotas moves every file aside unchanged, the -wal of an emptied database included', async () => {
    // A database whose last counts are in its -wal (a crash: no stop folded it back), then emptied.
    const s = await open(fresh('live'), { flushMs: 3_600_000 });
    s.take('key:g', basic, T0, month);
    await s.flush(true);
    const file = fresh('emptied-wal');
    for (const end of ['', '-wal', '.id']) copyFileSync(`${s.file}${end}`, `${file}${end}`);
    await s.close();
    truncateSync(file, 0);
    const wal = readFileSync(`${file}-wal`);
    expect(wal.length).toBeGreaterThan(0);
    await (await SqliteQuotaStore.open(file, { discardDamaged: true })).close();
    const [aside] = readdirSync(root).filter((n) => n.startsWith(`${basename(file)}.damaged-`));
    expect(readFileSync(join(root, aside!, `${basename(file)}-wal`)).equals(wal)).toBe(true);
    expect(readdirSync(root).filter((n) => n.includes('.salvage-'))).toEqual([]);
  });

  it('a database behind its witness (its -wal deleted after a crash) is refused by the store and usage; the salvage counts on from it', async () => {
    const s = await open(fresh('ahead'), { flushMs: 3_600_000 });
    s.take('key:g', basic, T0, month);
    await s.flush(true);
    s.db.exec('PRAGMA wal_checkpoint(TRUNCATE)'); // the database file holds the first request
    s.take('key:g', basic, T0 + 1, month);
    await s.flush(true); // the second is in the -wal alone, and the witness says it was saved
    // What a kill -9 leaves, with the -wal then deleted: the database file and its witness.
    const file = fresh('behind');
    for (const end of ['', '.id']) copyFileSync(`${s.file}${end}`, `${file}${end}`);
    const said =
      /its charges end at row (\d+), where \S+\.id says row (\d+) was saved: the rows after are gone \(its -wal deleted or cut after a crash/;
    const error = await SqliteQuotaStore.open(file).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QuotaStoreDamaged);
    expect((error as Error).message).toMatch(
      new RegExp(`^${file}: the quota database fails its check \\(${said.source}.*--discard-damaged-quotas`),
    );
    const billed = await cliAsync(['usage', '--quotas', file, '--keys', KEYS_FILE]);
    expect(billed.status).toBe(3);
    expect(billed.stderr).toMatch(said);
    const logged: string[] = [];
    await (await SqliteQuotaStore.open(file, { discardDamaged: true, log: (m) => logged.push(m) })).close();
    expect(logged.join('\n')).toMatch(/counting on from the 1 credentials that still read/);
    expect(await totalOf(file, 'key:g')).toBe(1); // what it held: the loss is said, then counted on from
    expect(await totalOf(s.file, 'key:g')).toBe(2);
  });

  it('serve and usage exit 3 naming the damaged database; --discard-damaged-quotas starts from the rows that read', async () => {
    const file = await held('served-damaged');
    const db = new DatabaseSync(file);
    db.exec(`INSERT INTO months (credential, month, requests) VALUES ('key:h', '${monthName(month.start)}', 7)`);
    db.close();
    const bytes = readFileSync(file);
    // The last page (the second table's rows) overwritten: the check fails, the first table still reads.
    bytes.fill(0x5a, bytes.length - 4096 + 8, bytes.length);
    writeFileSync(file, bytes);
    const args = ['--public', builtTree(), '--keys', KEYS_FILE, '--quotas', file];
    const refused = await cliAsync(['serve', '--port', String(await freePort()), ...args]);
    expect(refused.status).toBe(3);
    expect(refused.stderr).toMatch(new RegExp(`^risk-readings serve: ${file}: the quota database fails its check`));
    const billed = await cliAsync(['usage', '--quotas', file, '--keys', KEYS_FILE]);
    expect(billed.status).toBe(3);
    expect(billed.stderr).toMatch(new RegExp(`^risk-readings usage: ${file}: the quota database fails its check`));
    const salvaging = await serve([...args, '--discard-damaged-quotas']);
    await stopped(salvaging.child, 'SIGTERM');
    expect(salvaging.output()).toMatch(
      /--discard-damaged-quotas: counting on from the \d+ credentials that still read; the damaged files are in /,
    );
    const aside = readdirSync(root).filter((n) => n.startsWith(`${file.split('/').pop()}.damaged-`));
    expect(aside).toHaveLength(1);
    expect(readdirSync(join(root, aside[0]!))).toContain(file.split('/').pop());
    const after = await cliAsync(['usage', '--quotas', file, '--keys', KEYS_FILE, '--json']);
    expect(after.status, after.stderr).toBe(0);
  });
});

describe('the SQLite store: a quota file of the releases before, imported', () => {
  const fixture = join(ROOT, 'fixtures', 'quotas', 'schema-2');
  const expected = JSON.parse(readFileSync(join(fixture, 'expected.json'), 'utf8')) as Record<string, Record<string, number>>;
  /** Each credential's months the store keeps today (decision 38): the fixture's older months have aged out. */
  const keptSince = monthName(monthsAfter(month.start, -MONTHS_KEPT));

  it('reads the snapshot and its journals exactly, as the release that wrote them counted', () => {
    const { counts, notes } = readLegacyQuotaFile(join(fixture, 'quotas.json'));
    expect(notes).toEqual([]);
    for (const [credential, months] of Object.entries(expected))
      for (const [name, n] of Object.entries(months)) {
        const [y, m] = name.split('-').map(Number) as [number, number];
        expect(monthTotal(counts.get(credential)!, Date.UTC(y, m - 1, 1)), `${credential} ${name}`).toBe(n);
      }
  });

  it('serve imports it on the first start with every count exact, and keeps the old files aside as they were', async () => {
    const dir = join(root, `import-${randomBytes(3).toString('hex')}`);
    cpSync(fixture, dir, { recursive: true });
    const file = join(dir, 'quotas.json');
    const before = Object.fromEntries(readdirSync(dir).map((n) => [n, readFileSync(join(dir, n))]));
    const billedBefore = await cliAsync(['usage', '--quotas', file, '--keys', KEYS_FILE, '--month', '2026-11', '--json']);
    expect(billedBefore.status, billedBefore.stderr).toBe(0);
    const server = await serve(['--public', builtTree(), '--keys', KEYS_FILE, '--quotas', file]);
    await stopped(server.child, 'SIGTERM');
    expect(server.output()).toMatch(
      /imported the counts of 5 credentials from .*quotas\.json into .*quotas\.json; the old files are kept in /,
    );
    expect(server.output()).not.toMatch(/ExperimentalWarning/);
    expect(readFileSync(file).subarray(0, 15).toString()).toBe('SQLite format 3');
    const aside = readdirSync(dir).find((n) => n.startsWith('quotas.json.before-sqlite-'))!;
    for (const [name, bytes] of Object.entries(before))
      if (name !== 'expected.json') expect(readFileSync(join(dir, aside, name)).equals(bytes), name).toBe(true);
    const db = new DatabaseSync(file, { readOnly: true });
    const rows = db.prepare('SELECT credential, month, requests FROM months').all();
    db.close();
    const want = Object.entries(expected).flatMap(([credential, months]) =>
      Object.entries(months)
        .filter(([name, n]) => name >= keptSince && n > 0)
        .map(([name, n]) => ({ credential, month: name, requests: n })),
    );
    expect(rows).toEqual(expect.arrayContaining(want));
    expect(rows).toHaveLength(want.length);
    const billedAfter = await cliAsync(['usage', '--quotas', file, '--keys', KEYS_FILE, '--month', '2026-11', '--json']);
    if ('2026-11' >= keptSince) expect(JSON.parse(billedAfter.stdout)).toEqual(JSON.parse(billedBefore.stdout));
  });

  it("serve without --quotas imports the default's old file beside the tree into the new database", async () => {
    const tree = join(root, `tree-${randomBytes(3).toString('hex')}`);
    cpSync(builtTree(), tree, { recursive: true });
    for (const n of readdirSync(fixture))
      if (n.startsWith('quotas.json')) cpSync(join(fixture, n), join(tree, n.replace('quotas.json', '.risk-readings-quotas.json')));
    const server = await serve(['--public', tree, '--keys', KEYS_FILE]);
    await stopped(server.child, 'SIGTERM');
    expect(server.output()).toMatch(
      /imported the counts of 5 credentials from .*\.risk-readings-quotas\.json into .*\.risk-readings-quotas\.sqlite/,
    );
    expect(existsSync(join(tree, '.risk-readings-quotas.json'))).toBe(false);
    expect(readdirSync(tree).filter((n) => n.startsWith('.risk-readings-quotas.json.before-sqlite-'))).toHaveLength(1);
  });

  it('a journal damaged before its last frame is refused naming the file and frame; nothing is imported', async () => {
    const dir = join(root, `import-bad-${randomBytes(3).toString('hex')}`);
    cpSync(fixture, dir, { recursive: true });
    const journal = join(dir, 'quotas.json.journal.7');
    const bytes = readFileSync(journal);
    bytes[40]! ^= 0xff;
    writeFileSync(journal, bytes);
    const r = await cliAsync([
      'serve',
      '--port',
      String(await freePort()),
      '--public',
      builtTree(),
      '--keys',
      KEYS_FILE,
      '--quotas',
      join(dir, 'quotas.json'),
    ]);
    expect(r.status).toBe(3);
    expect(r.stderr).toMatch(/quotas\.json\.journal\.7, frame 1 \(byte 19\) fails its checksum\. Its counts cannot be read exactly/);
    expect(readFileSync(join(dir, 'quotas.json'), 'utf8')).toMatch(/^\{"schema":2/);
  });
});

/** `n` ultra keys in a key file of their own: enough room in each minute for a load of a few seconds. */

const billedTotal = async (file: string, keysFile: string) => {
  const r = await cliAsync(['usage', '--quotas', file, '--keys', keysFile, '--json']);
  expect(r.status, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { requests: number }[]).reduce((sum, row) => sum + row.requests, 0);
};

describe('the SQLite store under load: SIGTERM loses nothing, kill -9 at most the last second, nothing billed twice', () => {
  it('SIGTERM: every admitted request is counted', async () => {
    const { file: keysFile, keys } = manyKeysIn(200);
    const file = fresh('sigterm');
    const server = await serve(['--public', builtTree(), '--keys', keysFile, '--quotas', file, '--log-level', 'silent']);
    const l = load(server.url, keys);
    await until(() => l.admitted.length >= 300, 60_000, 50);
    await stopped(server.child, 'SIGTERM');
    await l.stop();
    expect(await billedTotal(file, keysFile)).toBe(l.admitted.length);
  });

  it('kill -9 at random points: each kill loses at most the last second of counts (checked with two to spare), none counted twice', async () => {
    const { file: keysFile, keys } = manyKeysIn(400);
    const file = fresh('kill9');
    let admitted = 0;
    let bound = 0;
    const losses: number[] = [];
    const bounds: number[] = [];
    for (let round = 0; round < 4; round++) {
      const server = await serve(['--public', builtTree(), '--keys', keysFile, '--quotas', file, '--log-level', 'silent']);
      const l = load(server.url, keys);
      // A random point past the loss allowed below, so that a round that saved nothing fails: 4 to 5 s into the
      // load, and after 100 answers at least.
      const started = Date.now();
      const after = 4_000 + Math.random() * 1_000;
      await until(() => l.admitted.length >= 100 && Date.now() - started >= after, 60_000, 5);
      // When the kill is sent, not when its end is heard of (later on a busy machine, and nothing is admitted between).
      const killedAt = Date.now();
      await stopped(server.child, 'SIGKILL');
      await l.stop();
      admitted += l.admitted.length;
      // The store saves once a second (flushMs), and a save takes its own time; on a busy machine its timer is late
      // and the save slow: what came in the last three seconds.
      bound += l.admitted.filter((t) => t > killedAt - 3_000).length;
      const counted = await billedTotal(file, keysFile);
      losses.push(admitted - counted);
      bounds.push(bound);
      expect(counted).toBeLessThanOrEqual(admitted);
      expect(admitted - counted).toBeLessThanOrEqual(bound);
    }
    // What a crash leaves behind does not pile up: the database, its WAL and index, its witness, a lock.
    const base = file.split('/').pop()!;
    const left = readdirSync(root).filter((n) => n.startsWith(base));
    expect(left.sort()).toEqual(expect.arrayContaining([base]));
    // (`.id.tmp`: a kill between the witness's write and its rename, written over by the next.)
    expect(left.every((n) => [base, `${base}-wal`, `${base}-shm`, `${base}.id`, `${base}.id.tmp`, `${base}.lock`].includes(n))).toBe(true);
    console.log(
      `kill -9 x4: ${admitted} admitted, ${admitted - losses.at(-1)!} counted; lost after each kill (cumulative): ${losses.join(', ')}; allowed: ${bounds.join(', ')}`,
    );
  });
});

describe('serve on the SQLite store', () => {
  it('serve with --quotas in a folder it cannot write exits 3 naming the file, the reason and the way on', async () => {
    // Root writes through a folder's mode; sysfs refuses it new files whatever the user.
    const folder = process.getuid?.() === 0 ? '/sys' : join(root, 'read-only');
    if (folder !== '/sys') {
      mkdirSync(folder);
      chmodSync(folder, 0o555);
    }
    const file = join(folder, 'quotas.sqlite');
    const r = await cliAsync(['serve', '--public', builtTree(), '--keys', KEYS_FILE, '--port', String(await freePort()), '--quotas', file]);
    expect(r.status).toBe(3);
    expect(r.stderr).toMatch(
      new RegExp(`^risk-readings serve: ${file}: the quota database cannot be opened or written there \\(EACCES: .*\\); the user serve`),
    );
  });

  it('a second serve on a database another serve holds exits 3 naming it', async () => {
    const file = fresh('served');
    const first = await serve(['--public', builtTree(), '--keys', KEYS_FILE, '--quotas', file]);
    try {
      const args = [
        'serve',
        '--public',
        builtTree(),
        '--keys',
        KEYS_FILE,
        '--port',
        String(await freePort()),
        '--quotas',
        file,
        '--quotas-wait',
        '1s',
      ];
      const second = await cliAsync(args);
      expect(second.status).toBe(3);
      expect(second.stderr).toMatch(
        /another process counts in this quota database \(pid \d+ .*waited 1 s\. One process counts per quota database/,
      );
    } finally {
      await stopped(first.child, 'SIGTERM');
    }
    expect(existsSync(`${file}.lock`)).toBe(false);
  });

  it('a second signal during the stop does not cut the save short: the charges a held lock keeps out are kept beside', async () => {
    const file = fresh('signals');
    const served = await serve(['--public', builtTree(), '--keys', KEYS_FILE, '--quotas', file]);
    for (let i = 0; i < 4; i++)
      expect((await fetch(`${served.url}/v1/assets/BTC/risk`, { headers: { 'X-API-Key': KEY.pro } })).status).toBe(200);
    const holder = new DatabaseSync(file);
    holder.exec('BEGIN IMMEDIATE');
    const exited = new Promise<number | null>((resolve) => served.child.once('exit', (code) => resolve(code)));
    served.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    served.child.kill('SIGTERM');
    served.child.kill('SIGINT');
    expect(await exited).toBe(3);
    holder.exec('ROLLBACK');
    holder.close();
    expect(served.output()).toMatch(/stopping already/);
    const unsaved = served.output().match(/they are kept in (\S+\.unsaved-\S+\.json)/)?.[1];
    expect(statSync(unsaved!).mode & 0o777).toBe(0o600); // credentials, as private as the database
    expect(await totalOf(file, `key:${createHash('sha256').update(KEY.pro).digest('hex')}`)).toBe(4);
  });

  it("SIGTERM and SIGINT (pm2's stop) save: a key keeps its count across restarts of the real server, and billing reads it meanwhile", async () => {
    const file = fresh('cli');
    const get = (url: string, key: string = KEY.basic) => fetch(`${url}/v1/assets/BTC/risk`, { headers: { 'X-API-Key': key } });
    const first = await serve(['--public', builtTree(), '--keys', KEYS_FILE, '--quotas', file]);
    for (let i = 0; i < 3; i++) expect((await get(first.url)).status).toBe(200);
    await stopped(first.child, 'SIGTERM');
    const billed = async (plan: string) => {
      const r = await cliAsync(['usage', '--quotas', file, '--keys', KEYS_FILE, '--json']);
      expect(r.status, r.stderr).toBe(0);
      return (JSON.parse(r.stdout) as { plan: string; requests: number }[]).find((row) => row.plan === plan)!.requests;
    };
    const second = await serve(['--public', builtTree(), '--keys', KEYS_FILE, '--quotas', file]);
    try {
      expect((await get(second.url)).status).toBe(200);
      expect((await get(second.url)).status).toBe(200);
      expect((await get(second.url)).status).toBe(429);
      expect(await until(async () => (await billed('basic')) === 5, 60_000, 200)).toBe(true);
      expect((await fetch(`${second.url}/v1/health`)).status).toBe(200);
      // Counted the moment before the stop: saved by the stop, not by the save each second.
      expect((await get(second.url, KEY.pro)).status).toBe(200);
    } finally {
      await stopped(second.child, 'SIGINT');
    }
    expect(await billed('pro')).toBe(1);
  });
});
