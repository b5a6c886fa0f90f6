/**
 * The Node server's own quota store (decisions 21 and 97), counting in the quota database (quota-database.ts). The
 * rule (`admit`) reads counts held in memory; they are saved each second, so a kill -9 loses at most the last
 * second's, and `close()` (SIGTERM) saves the rest. One process counts in a database at a time (`<file>.lock`): a
 * second would overwrite the first's counts.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { DatabaseSync } from 'node:sqlite';
import { holderAlive, holderOf, LockHeld, lockFile, type Lock } from '../../generator/output/lock.js';
import {
  chargeCount,
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
  logCharges,
  noneBehind,
  prepare,
  QuotaStoreUnwritable,
  SLICE,
  restored,
  transaction,
  unwritable,
  witnessed,
  writeMonths,
  writeUnsaved,
  type Logged,
  type RecoveryOptions,
} from './quota-database.js';
import { TroubleLog } from '../trouble-log.js';

export { QuotaStoreDamaged, QuotaStoreUnwritable } from './quota-database.js';
/** Another process counts in this database (serve's exit 3): names it and what to use instead. */
export class QuotaStoreHeld extends Error {}

/** How often the months rows are brought up to the charges (a busy credential's row is written once per FOLD_MS). */
const FOLD_MS = 30_000;
/** How long a save waits for another process's write lock: node:sqlite waits on the event loop, holding every request. */
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
/** The claims of this process's closed stores (a row a held lock kept from being removed holds nothing). */
const closed = new Set<string>();

/**
 * This process as the one counting in the database, in its `meta` row `counting`, which every name of the file shares
 * (`<file>.lock` is beside one name only; a hard link is another). A live process counting in this very file (its
 * inode: a copy is another file) holds it: LockHeld, which `open` waits on as on the lock.
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

/** The inode of `file`, or null where it is gone (or, with `emptyIsGone`, emptied in place: no longer a database). */
const inodeOf = (file: string, emptyIsGone = false): number | null => {
  try {
    const s = statSync(file);
    return emptyIsGone && s.size === 0 ? null : s.ino;
  } catch {
    return null;
  }
};
/**
 * Which files the database and its `-wal` are, as their inodes. A database file emptied in place (`truncate -s 0`) is
 * no longer the database (SQLite writes its header at once), as one removed is not; an empty `-wal` is a `-wal`.
 */
const filesOf = (file: string): [number | null, number | null] => [inodeOf(file, true), inodeOf(`${file}-wal`)];

export class SqliteQuotaStore extends MemoryQuotaStore {
  /** The credentials whose months rows are behind the charges logged since the last fold. */
  private behind = noneBehind();
  /** The charges counted since the last save. */
  private pending: Logged[] = [];
  /** The last `charges` row written, and the last one the months rows count (the rows up to it may go). */
  private lastRow: number;
  private folded: number;
  private saving: Promise<void> | null = null;
  private readonly timer: ReturnType<typeof setInterval>;
  /** The inodes of the database file and its `-wal`: others at their paths mean they were removed under this store. */
  private files: [number | null, number | null];
  private folderGone = false;
  private readonly troubles: TroubleLog<'save'>;
  /** Why the last save failed, which a stop that cannot save says. */
  private problem = '';
  private lastFold = -Infinity;
  /** The database's id (`meta`), which its witness names. */
  private readonly id: string;

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
    this.files = filesOf(file);
    this.troubles = new TroubleLog(log);
    [this.counts, this.lastRow, this.folded] = [counts, last, last];
    this.id = String(database.prepare(`SELECT value FROM meta WHERE key = 'id'`).get()?.value);
    // A write lock another process holds fails a save at once, kept for the next (SQLite's wait is 5 s at open).
    database.exec(`PRAGMA busy_timeout = ${BUSY_MS}`);
    this.timer = setInterval(() => void this.flush(), flushMs);
    this.timer.unref();
  }

  /** Opens the database at `given`, waiting up to `waitMs` for a serve's lock (a rolling restart) or a write lock. */
  static async open(given: string, o: SqliteOptions = {}): Promise<SqliteQuotaStore> {
    const { waitMs = 30_000, flushMs = 1_000, log = () => {} } = o;
    const file = realFile(given);
    const deadline = Date.now() + waitMs;
    for (let waiting = false; ; waiting = true) {
      let [lock, db]: [Lock?, DatabaseSync?] = [];
      try {
        lock = await lockFile(`${file}.lock`, COMMAND, 'another process counts in this quota database');
        // SQLite's own wait for a write lock ends with ours: --quotas-wait is not overshot by its 5 s.
        db = prepare(file, { ...o, busyMs: Math.min(5_000, deadline - Date.now()) }, log);
        const token = randomUUID();
        claim(db, file, token);
        return new SqliteQuotaStore(file, db, lock, log, flushMs, token, caughtUp(db, file));
      } catch (e) {
        db?.close();
        await lock?.release();
        const held =
          e instanceof LockHeld
            ? e.message
            : isBusy(e)
              ? `${file}: another process holds the quota database's write lock (a sqlite3 shell in a transaction, say)`
              : null;
        if (held === null) throw unwritable(file, e);
        if (Date.now() >= deadline)
          throw new QuotaStoreHeld(
            `${held}; waited ${waitMs / 1000} s. ${e instanceof LockHeld ? 'One process counts per quota database: share counts between processes with --quotas redis://HOST:PORT, or give each its own file' : 'End its transaction, then start serve again'}`,
          );
        // Said once, as the wait starts: a rolling restart's new serve, or one started beside by mistake, is not mute for it.
        if (!waiting) log(`quotas: ${held}; waiting up to ${waitMs / 1000} s (--quotas-wait) for it to let go`);
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

  /** Saves what was counted since the last save (`save`); one save at a time (a flush during one waits for it). */
  flush(fold = Date.now() - this.lastFold >= FOLD_MS): Promise<void> {
    this.saving ??= this.save(fold).finally(() => (this.saving = null));
    return this.saving;
  }

  /**
   * Logs the charges counted since the last save as `charges` rows, SLICE to a transaction with the event loop free
   * between. Every FOLD_MS (and at `close`) it also writes, from memory, the months rows of the credentials changed
   * since the last fold, each counting exactly the charges up to the last row (`through`): a busy credential costs a
   * row per FOLD_MS, not one a second. Rows the months count go once a minute old (the minute reads them till then).
   * What fails is kept.
   */
  private async save(fold: boolean): Promise<void> {
    try {
      const [db, wal] = filesOf(this.file);
      if (db !== this.files[0] || wal !== this.files[1]) this.reopen(db === this.files[0]);
      for (let due = this.pending.length; due > 0; due -= SLICE) {
        this.append(this.pending.splice(0, SLICE));
        await new Promise((r) => setImmediate(r));
      }
      if (fold) await this.fold();
      this.db.prepare('DELETE FROM charges WHERE id <= ? AND saved <= ?').run(this.folded, Date.now() - MINUTE_MS);
      // After the commit, never before: a witness may trail its database, never lead it.
      if (!this.folderGone) witnessed(this.file, this.id, this.lastRow);
    } catch (e) {
      this.problem = (e as Error).message;
      this.troubles.say(
        'save',
        `quotas: cannot save to ${this.file} (${this.problem}); the counts are kept in memory and saved once it can`,
      );
    }
  }

  /**
   * Writes the months rows of the credentials behind, SLICE to a transaction with the event loop free between (20,000
   * in one held every request 55 to 125 ms), in key order so that a slice rewrites a few of the table's pages, not
   * most. Each transaction first logs what was counted meanwhile, so its rows count exactly the charges up to their
   * `through`; the last also writes the rows of those counted since the fold began, so a fold leaves none behind. A
   * failure leaves them all behind.
   */
  private async fold(): Promise<void> {
    const old = this.behind;
    this.behind = noneBehind();
    const credentials = [...old.credentials].sort();
    try {
      for (let i = 0; ; i += SLICE) {
        const last = i + SLICE >= credentials.length;
        this.append(this.pending.splice(0), (row) => {
          const slice = credentials.slice(i, i + SLICE).concat(last ? [...this.behind.credentials] : []);
          writeMonths(this.db, this.counts, { credentials: new Set(slice), from: Math.min(old.from, this.behind.from) }, row);
        });
        if (last) break;
        await new Promise((r) => setImmediate(r));
      }
    } catch (e) {
      for (const credential of credentials) this.behind.credentials.add(credential);
      this.behind.from = Math.min(this.behind.from, old.from);
      throw e;
    }
    [this.behind, this.folded, this.lastFold] = [noneBehind(), this.lastRow, Date.now()];
  }

  /** Logs `charges` in one transaction with what `also` writes, noting whose months they put behind; a failure keeps them. */
  private append(charges: Logged[], also = (_last: number) => {}): void {
    // The earliest month changed, from the earliest time: one monthOf per row, not per charge.
    let earliest = Infinity;
    for (const [credential, at, kind] of charges)
      if (kind !== 'minute') {
        this.behind.credentials.add(credential);
        earliest = Math.min(earliest, at); // a refund's `at` is its month's start
      }
    if (earliest < Infinity) this.behind.from = Math.min(this.behind.from, monthOf(earliest).start);
    let last = this.lastRow;
    try {
      transaction(this.db, () => {
        last = logCharges(this.db, charges, last);
        also(last);
      });
    } catch (e) {
      this.pending = charges.concat(this.pending);
      throw e;
    }
    this.lastRow = last;
  }

  /**
   * The database (or its `-wal`), removed under serve, written again from the one open here. A folder gone (a tree
   * moved while served) leaves the counts going on in the file open here, wherever it went.
   */
  private reopen(walOnly: boolean): void {
    if (!existsSync(dirname(this.file))) {
      if (!this.folderGone) this.log(`quotas: the folder of ${this.file} is gone; counting on in the database serve has open`);
      return void (this.folderGone = true);
    }
    this.database = restored(this.database, this.file, this.log, walOnly);
    claim(this.database, this.file, this.token); // the file written again is another inode
    this.database.exec(`PRAGMA busy_timeout = ${BUSY_MS}`);
    this.files = filesOf(this.file);
  }

  /**
   * Saves everything, waiting up to CLOSE_WAIT_S for another process's write lock; what still cannot be saved goes to
   * `<file>.unsaved-<time>.json`, which the next start (and `usage`) counts, and the error says so.
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
    // The WAL folded into the database (a copy of the file alone is then whole) and the claim let go; either may fail:
    // a file overwritten in place under serve (the save said why; the next start names the damage), or another
    // process's lock (the next start finds this one gone).
    closed.add(this.token);
    for (const sql of ['PRAGMA wal_checkpoint(TRUNCATE)', `DELETE FROM meta WHERE key = 'counting'`])
      try {
        this.db.exec(sql);
      } catch {
        // said above
      }
    this.db.close();
    await this.lock.release();
    if (kept)
      throw new QuotaStoreUnwritable(
        `${this.file}: ${chargeCount(this.pending.length)} could not be saved in ${CLOSE_WAIT_S} s (${this.problem}); ${kept}`,
      );
  }
}
