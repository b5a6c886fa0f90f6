/**
 * The Node server's own quota store (decisions 21 and 97), counting in the quota database (quota-database.ts). The
 * counts are held in memory, where the rule (`admit`) reads them on the request path. Once a second what was counted
 * since is appended to the database as rows of `charges` (each a JSON array of charges), so a crash (kill -9) loses
 * at most the last second's counts, and `close()` (SIGTERM) writes the rest: none. Every 30 s the `months` rows of
 * the credentials counted since are written from memory, each naming the last `charges` row it counts (`through`): a
 * month's total is its row plus the charges after that, so every request is counted once, and a busy credential
 * costs a row per 30 s, not one per second.
 *
 * One process counts in a database at a time (`<file>.lock`, as a build's lock): the counts in memory are that
 * process's, and a second one would overwrite them.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { DatabaseSync } from 'node:sqlite';
import { holderAlive, holderOf, LockHeld, lockFile, type Lock } from '../../generator/output/lock.js';
import {
  MemoryQuotaStore,
  MINUTE_MS,
  monthOf,
  type Admission,
  type Counts,
  type Limits,
  type MonthUse,
  type MonthWindow,
} from '../quota.js';
import {
  caughtUp,
  isBusy,
  monthsFrom,
  prepare,
  QuotaStoreUnwritable,
  readCounts,
  restored,
  transaction,
  walRestored,
  unwritable,
  writeMonths,
  writer,
  writeUnsaved,
  type Logged,
  type RecoveryOptions,
} from './quota-database.js';

export { QuotaStoreDamaged, QuotaStoreUnwritable } from './quota-database.js';
/** Another process counts in this database (serve's exit 3): names it and what to use instead. */
export class QuotaStoreHeld extends Error {}

/** Charges per `charges` row (and a quarter as many months rows per transaction): a few milliseconds' write. */
const SLICE = 2_000;
/** How often the months rows are brought up to the charges (a busy credential's row is written once per FOLD_MS). */
const FOLD_MS = 30_000;
/**
 * How long a running store waits for another process's write lock (a `webhooks disable` takes far less): node:sqlite
 * waits on the event loop, so a longer wait would hold every request. A stop waits CLOSE_WAIT_S.
 */
const BUSY_MS = 50;
const CLOSE_WAIT_S = 5;

export interface SqliteOptions extends RecoveryOptions {
  flushMs?: number;
  log?: (m: string) => void;
  /** How long to wait for another process to let go of the database (a rolling restart). */
  waitMs?: number;
}

/** `file` through any symlink to it or to its folder, so that every name of one database takes one lock. */
function realFile(file: string): string {
  try {
    return existsSync(file) ? realpathSync(file) : join(realpathSync(dirname(file)), basename(file));
  } catch (e) {
    throw unwritable(file, e);
  }
}

const COMMAND = `risk-readings serve (pid ${process.pid})`;
/** The claims of this process's stores that have closed (one whose row a held lock kept it from removing holds nothing). */
const closed = new Set<string>();

/**
 * This process as the one counting in the database, in its `meta` (`counting`), which every name of the file shares:
 * `<file>.lock` is beside one name, and a hard link is another. A live process counting in this very file (its inode;
 * a copy is another file) holds it: LockHeld, which `open` waits on as on the lock.
 */
function claim(db: DatabaseSync, file: string, token: string): void {
  const me = { ...holderOf(`${file}.lock`, COMMAND), inode: statSync(file).ino, token };
  transaction(
    db,
    () => {
      const row = db.prepare(`SELECT value FROM meta WHERE key = 'counting'`).get()?.value;
      const holder = row ? (JSON.parse(String(row)) as typeof me) : null;
      if (holder && holder.inode === me.inode && holder.token !== token && !closed.has(holder.token) && holderAlive(holder))
        throw new LockHeld(file, holder, 'another process counts in this quota database, through another name of it (a hard link)');
      db.prepare(`INSERT INTO meta VALUES ('counting', ?) ON CONFLICT DO UPDATE SET value = excluded.value`).run(JSON.stringify(me));
    },
    'BEGIN IMMEDIATE',
  );
}

const inodeOf = (file: string): number | null => {
  try {
    return statSync(file).ino;
  } catch {
    return null;
  }
};
/** Which files the database and its `-wal` are, as their inodes. */
const filesOf = (file: string): [number | null, number | null] => [inodeOf(file), inodeOf(`${file}-wal`)];

export class SqliteQuotaStore extends MemoryQuotaStore {
  /**
   * The credentials whose months rows are behind the charges logged, the earliest month changed among them, and the
   * first `charges` row that holds a change of theirs (the rows from it on are kept).
   */
  private behind = { credentials: new Set<string>(), from: Infinity, row: Infinity };
  /** The charges counted since the last save. */
  private pending: Logged[] = [];
  /** The last `charges` row written. */
  private lastRow: number;
  private saving: Promise<void> | null = null;
  private readonly timer: ReturnType<typeof setInterval>;
  private put;
  /** The inodes of the database file and its `-wal`: others at their paths mean they were removed under this store. */
  private files: [number | null, number | null];
  private folderGone = false;
  private lastProblem = -Infinity;
  private problem = '';
  private lastFold = -Infinity;

  private constructor(
    readonly file: string,
    private database: DatabaseSync,
    private readonly lock: Lock,
    private readonly log: (m: string) => void,
    flushMs: number,
    /** This store's claim on the database (`claim`). */
    private readonly token: string,
    { counts, last }: { counts: Map<string, Counts>; last: number },
  ) {
    super();
    this.put = writer(database);
    this.files = filesOf(file);
    [this.counts, this.lastRow] = [counts, last];
    // A write lock another process holds fails a save at once, kept for the next (SQLite's wait is 5 s at open).
    database.exec(`PRAGMA busy_timeout = ${BUSY_MS}`);
    this.timer = setInterval(() => void this.flush(), flushMs);
    this.timer.unref();
  }

  /**
   * Opens the database at `given` (through any symlink: the lock is the real file's), waiting up to `waitMs` for
   * another process to let go of it: a serve's lock (a rolling restart), or SQLite's write lock (a `sqlite3` shell).
   */
  static async open(given: string, o: SqliteOptions = {}): Promise<SqliteQuotaStore> {
    const { waitMs = 30_000, flushMs = 1_000, log = () => {} } = o;
    const file = realFile(given);
    const deadline = Date.now() + waitMs;
    for (;;) {
      let [lock, db]: [Lock?, DatabaseSync?] = [];
      try {
        lock = await lockFile(`${file}.lock`, COMMAND, 'another process counts in this quota database');
        // SQLite's own wait for a write lock ends with ours: --quotas-wait is not overshot by its 5 s.
        db = prepare(file, { ...o, busyMs: Math.min(5_000, deadline - Date.now()) }, log);
        const token = randomUUID();
        claim(db, file, token);
        return new SqliteQuotaStore(file, db, lock, log, flushMs, token, caughtUp(db, readCounts(db, file)));
      } catch (e) {
        db?.close();
        await lock?.release();
        const held =
          e instanceof LockHeld
            ? `${e.message}; waited ${waitMs / 1000} s. One process counts per quota database: share counts between processes with --quotas redis://HOST:PORT, or give each its own file`
            : isBusy(e)
              ? `${file}: another process holds the quota database's write lock (a sqlite3 shell in a transaction, say); waited ${waitMs / 1000} s. End its transaction, then start serve again`
              : null;
        if (held === null) throw unwritable(file, e);
        if (Date.now() >= deadline) throw new QuotaStoreHeld(held);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  /** The database, which the webhook store shares (decision 108). */
  get db(): DatabaseSync {
    return this.database;
  }

  override take(credential: string, limits: Limits, now: number, month: MonthWindow, use: MonthUse = 'request'): Admission {
    const a = super.take(credential, limits, now, month, use);
    if (a.ok) this.pending.push(a.monthCharged ? [credential, now] : [credential, now, 'minute']);
    return a;
  }

  override refund(credential: string, month: MonthWindow): void {
    super.refund(credential, month);
    this.pending.push([credential, month.start, 'refund']);
  }

  /** Writes what was counted since the last save; one save at a time (a flush during one waits for it). */
  flush(all = false): Promise<void> {
    this.saving ??= this.save(all).finally(() => (this.saving = null));
    return this.saving;
  }

  /**
   * The charges counted before the save began, SLICE to a `charges` row, each a transaction with the event loop free
   * between. Every FOLD_MS (and at `close`), then, the months of the credentials changed since the last fold, SLICE / 4
   * of them in key order (so that a transaction writes few pages) to a transaction that also logs every charge counted
   * so far: a months row written then counts exactly the charges up to the `charges` row written with it (`through`).
   * What fails is kept for the next save. Last, the charges rows no months row needs go once a minute old.
   */
  private async save(all: boolean): Promise<void> {
    const tick = () => new Promise((r) => setImmediate(r));
    const folding = this.behind;
    let [fold, folded] = [[] as string[], 0];
    try {
      const [db, wal] = filesOf(this.file);
      if (db !== this.files[0] || wal !== this.files[1]) this.reopen(db === this.files[0]);
      for (let due = this.pending.length; due > 0; due -= SLICE) {
        this.append(this.pending.splice(0, SLICE));
        await tick();
      }
      if (all || Date.now() - this.lastFold >= FOLD_MS) {
        fold = [...folding.credentials].sort();
        [this.behind, this.lastFold] = [{ credentials: new Set(), from: Infinity, row: Infinity }, Date.now()];
        for (; folded < fold.length; folded += SLICE / 4) {
          this.append(this.pending.splice(0), () => {
            for (const credential of fold.slice(folded, folded + SLICE / 4))
              writeMonths(this.put, credential, monthsFrom(this.counts.get(credential)!, folding.from), this.lastRow);
          });
          await tick();
        }
      }
      this.db
        .prepare('DELETE FROM charges WHERE id < ? AND saved <= ?')
        .run(Math.min(this.behind.row, this.lastRow + 1), Date.now() - MINUTE_MS);
    } catch (e) {
      this.problem = (e as Error).message;
      // The credentials of a fold cut short are behind still, from the month and row they were.
      for (const credential of fold.slice(folded)) this.behind.credentials.add(credential);
      if (folded < fold.length)
        [this.behind.from, this.behind.row] = [Math.min(this.behind.from, folding.from), Math.min(this.behind.row, folding.row)];
      if (Date.now() - this.lastProblem >= MINUTE_MS) {
        this.lastProblem = Date.now();
        this.log(`quotas: cannot save to ${this.file} (${(e as Error).message}); the counts are kept in memory and saved once it can`);
      }
    }
  }

  /**
   * The database (or its `-wal`) written again at its path from the one open here, and opened there. A folder gone
   * (a tree moved while served) leaves the counts going on in the file open here, wherever it went.
   */
  private reopen(walOnly: boolean): void {
    if (!existsSync(dirname(this.file))) {
      if (!this.folderGone) this.log(`quotas: the folder of ${this.file} is gone; counting on in the database serve has open`);
      return void (this.folderGone = true);
    }
    this.database = (walOnly ? walRestored : restored)(this.database, this.file, this.log);
    claim(this.database, this.file, this.token); // the file written again is another inode
    this.database.exec(`PRAGMA busy_timeout = ${BUSY_MS}`);
    [this.put, this.files] = [writer(this.database), filesOf(this.file)];
  }

  /**
   * Logs `charges` as a `charges` row, in one transaction with what `also` writes, and notes the months rows they put
   * behind; what fails goes back to the front of the pending charges.
   */
  private append(charges: Logged[], also = () => {}): void {
    try {
      transaction(this.db, () => {
        if (charges.length) this.lastRow = Number(this.put.charges.run(Date.now(), JSON.stringify(charges)).lastInsertRowid);
        also();
      });
    } catch (e) {
      this.pending = charges.concat(this.pending);
      throw e;
    }
    const behind = this.behind;
    // The earliest month changed, from the earliest time: one monthOf per row, not per charge.
    let [earliest, changed] = [Infinity, false];
    for (const [credential, at, kind] of charges)
      if (kind !== 'minute') {
        behind.credentials.add(credential);
        earliest = Math.min(earliest, at); // a refund's `at` is its month's start
        changed = true;
      }
    if (changed) [behind.from, behind.row] = [Math.min(behind.from, monthOf(earliest).start), Math.min(behind.row, this.lastRow)];
  }

  /**
   * Saves everything, waiting up to CLOSE_WAIT_S for another process's write lock (nothing else waits on the event
   * loop now); what still cannot be saved goes to `<file>.unsaved-<time>.json`, which the next start (and `usage`)
   * counts, and the error says so.
   */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.saving;
    this.db.exec(`PRAGMA busy_timeout = ${CLOSE_WAIT_S * 1_000}`);
    await this.flush(true);
    this.db.exec(`PRAGMA busy_timeout = ${BUSY_MS}`);
    // What could not be saved is kept beside the database, or, where its folder is gone too, said to be lost.
    let kept: string | undefined;
    try {
      if (this.pending.length)
        kept = `they are kept in ${writeUnsaved(this.file, this.pending)}, which the next start of serve takes in and usage counts meanwhile`;
    } catch (e) {
      kept = `nor could they be kept beside it (${(e as Error).message}): they are lost`;
    }
    // The WAL folded into the database (a copy of the file alone is then whole), unless another process holds it.
    try {
      this.db.prepare('PRAGMA wal_checkpoint(TRUNCATE)').get();
    } catch {
      // A file overwritten in place under serve: the save failed and said why; the next start names the damage.
    }
    closed.add(this.token);
    try {
      this.db.exec(`DELETE FROM meta WHERE key = 'counting'`);
    } catch {
      // Held by another process still: the next start finds this one gone.
    }
    this.db.close();
    await this.lock.release();
    if (kept)
      throw new QuotaStoreUnwritable(
        `${this.file}: ${this.pending.length} charges could not be saved in ${CLOSE_WAIT_S} s (${this.problem}); ${kept}`,
      );
  }
}
