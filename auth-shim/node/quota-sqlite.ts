/**
 * The Node server's own quota store (decisions 21 and 97): one SQLite database (`node:sqlite`), which an operator
 * can open with `sqlite3` (its tables are in docs/shim.md). The counts are held in memory, where the rule (`admit`)
 * reads them on the request path; what changed is written to the database once a second, in slices between requests,
 * so a crash (kill -9) loses at most the last second's counts, and `close()` (SIGTERM) writes the rest: none.
 *
 * One process counts in a database at a time (`<file>.lock`, as a build's lock): the counts in memory are that
 * process's, and a second one would overwrite them. Damage is never read as "no counts": a database that fails
 * SQLite's integrity check, or is gone or empty while its witness (`<file>.id`, written with it) says it held counts,
 * is refused (QuotaStoreDamaged, serve's exit 3) unless the operator asks to start from the rows that still read.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { LockHeld, lockFile, type Lock } from '../../generator/output/lock.js';
import {
  MemoryQuotaStore,
  MINUTE_MS,
  monthName,
  monthOf,
  monthsAfter,
  MONTHS_KEPT,
  type Admission,
  type Counts,
  type Limits,
  type MonthUse,
  type MonthWindow,
} from '../quota.js';
import { isLegacyQuotaFile, legacyFiles, readLegacyQuotaFile } from './quota-import.js';

/** A database that cannot be trusted to hold every count: named, with the way on (serve and usage exit 3). */
export class QuotaStoreDamaged extends Error {}
/** Another process counts in this database (serve's exit 3): names it and what to use instead. */
export class QuotaStoreHeld extends Error {}

const TABLES = `
CREATE TABLE IF NOT EXISTS months (credential TEXT NOT NULL, month TEXT NOT NULL, requests INTEGER NOT NULL,
  PRIMARY KEY (credential, month)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS minutes (credential TEXT NOT NULL, at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
`;
/** Credentials written per transaction: a slice blocks the event loop for a few milliseconds at most. */
const SLICE = 500;
const witnessOf = (file: string) => `${file}.id`;
const asideName = (file: string, what: string) => `${file}.${what}-${new Date().toISOString().replace(/[:.]/g, '-')}`;

export interface SqliteOptions {
  flushMs?: number;
  log?: (m: string) => void;
  /** How long to wait for another process to let go of the database (a rolling restart). */
  waitMs?: number;
  /** `serve --discard-damaged-quotas`: start from the rows still readable, moving the damaged files aside. */
  discardDamaged?: boolean;
  /** A quota file of an earlier release to import on the first start (default: `file` itself, when it is one). */
  legacy?: string;
}

/** Opens `file` read-only and checks it whole; throws QuotaStoreDamaged naming it and the way on. */
export function checkedDatabase(file: string, readOnly = false): DatabaseSync {
  const witness = readWitness(file);
  const way = `restore it from a copy (stop serve first), or start serve once with --discard-damaged-quotas, which keeps the rows that still read and moves the damaged file aside`;
  if (!existsSync(file) || statSync(file).size === 0) {
    if (witness)
      throw new QuotaStoreDamaged(
        `${file}: the quota database is ${existsSync(file) ? 'empty' : 'gone'}, but ${witnessOf(file)} says it held the counts of database ${witness} since it was made; ${way}`,
      );
    return openDatabase(file, readOnly);
  }
  let db: DatabaseSync | undefined;
  try {
    db = openDatabase(file, readOnly);
    const check = db
      .prepare('PRAGMA integrity_check')
      .all()
      .map((r) => String(Object.values(r)[0]));
    if (check.join() !== 'ok') throw new Error(check.slice(0, 3).join('; '));
    const id = (db.prepare(`SELECT value FROM meta WHERE key = 'id'`).get()?.value as string | undefined) ?? null;
    if (witness && id !== witness) throw new Error(`it is database ${id}, where ${witnessOf(file)} names ${witness}`);
    return db;
  } catch (e) {
    db?.close();
    throw new QuotaStoreDamaged(`${file}: the quota database fails its check (${(e as Error).message}); ${way}`, { cause: e });
  }
}

function openDatabase(file: string, readOnly: boolean): DatabaseSync {
  const db = new DatabaseSync(file, { readOnly });
  db.exec('PRAGMA busy_timeout = 5000');
  if (!readOnly) db.exec(`PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; ${TABLES}`);
  return db;
}

function readWitness(file: string): string | null {
  try {
    return (JSON.parse(readFileSync(witnessOf(file), 'utf8')) as { database?: string }).database ?? null;
  } catch {
    return null;
  }
}

/**
 * Each credential's counts as the database holds them: its months, and its minute's times after `now - 60 s`. With
 * `upTo`, damage ends the reading instead of failing it: what was read before it is kept, and the error passed on.
 */
function readCounts(db: DatabaseSync, now: number, upTo?: (e: Error) => void): Map<string, Counts> {
  const month = monthOf(now);
  const counts = new Map<string, Counts>();
  const of = (credential: unknown) => {
    let c = counts.get(String(credential));
    if (!c) counts.set(String(credential), (c = { minute: [], monthStart: month.start, month: 0, past: [] }));
    return c;
  };
  try {
    for (const r of db.prepare('SELECT credential, month, requests FROM months ORDER BY credential, month').iterate()) {
      const [y, m] = String(r.month).split('-').map(Number) as [number, number];
      const [start, c] = [Date.UTC(y, m - 1, 1), of(r.credential)];
      if (start === month.start) c.month = Number(r.requests);
      else if (start < month.start) c.past.push([start, Number(r.requests)]);
    }
    for (const r of db.prepare('SELECT credential, at FROM minutes WHERE at > ? ORDER BY at').iterate(now - MINUTE_MS))
      of(r.credential).minute.push(Number(r.at));
  } catch (e) {
    if (!upTo) throw e;
    upTo(e as Error);
  }
  return counts;
}

/** The statements that write a credential's rows, prepared once per database. */
const writer = (db: DatabaseSync) => ({
  minute: db.prepare('INSERT INTO minutes VALUES (?, ?)'),
  month: db.prepare('INSERT INTO months VALUES (?, ?, ?) ON CONFLICT DO UPDATE SET requests = excluded.requests'),
});

/** Writes one credential's months from `from` on (and, in a new database, its minute). */
function writeCounts(put: ReturnType<typeof writer>, credential: string, c: Counts, from = -Infinity): void {
  if (from === -Infinity) for (const at of c.minute) put.minute.run(credential, at);
  for (const [start, n] of [...c.past, [c.monthStart, c.month] as const]) if (start >= from) put.month.run(credential, monthName(start), n);
}

export class SqliteQuotaStore extends MemoryQuotaStore {
  /** Credentials whose months changed since the last save, with the earliest month that changed. */
  private dirty = new Map<string, number>();
  /** Each request counted in a minute since the last save: appended to `minutes`, in time order. */
  private recent: [string, number][] = [];
  /** The last row each save appended, with its time: rows a minute old are removed up to it. */
  private marks: [number | bigint, number][] = [];
  private saving: Promise<void> | null = null;
  private readonly timer: ReturnType<typeof setInterval>;
  private readonly put;
  private lastProblem = -Infinity;

  private constructor(
    readonly file: string,
    /** The database, which the webhook store shares (decision 108). */
    readonly db: DatabaseSync,
    private readonly lock: Lock,
    private readonly log: (m: string) => void,
    flushMs: number,
  ) {
    super();
    this.put = writer(db);
    this.timer = setInterval(() => void this.flush(), flushMs);
    this.timer.unref();
  }

  static async open(file: string, o: SqliteOptions = {}): Promise<SqliteQuotaStore> {
    const { waitMs = 30_000, flushMs = 1_000, log = () => {} } = o;
    const deadline = Date.now() + waitMs;
    let lock: Lock;
    for (;;) {
      try {
        lock = await lockFile(`${file}.lock`, `risk-readings serve (pid ${process.pid})`, 'another process counts in this quota database');
        break;
      } catch (e) {
        if (!(e instanceof LockHeld)) throw e;
        if (Date.now() >= deadline)
          throw new QuotaStoreHeld(
            `${e.message}; waited ${waitMs / 1000} s. One process counts per quota database: share counts between processes with --quotas redis://HOST:PORT, or give each its own file`,
          );
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    try {
      const db = prepare(file, o, log);
      const store = new SqliteQuotaStore(file, db, lock, log, flushMs);
      for (const [k, c] of readCounts(db, Date.now())) store.counts.set(k, c);
      return store;
    } catch (e) {
      await lock.release();
      throw e;
    }
  }

  override take(credential: string, limits: Limits, now: number, month: MonthWindow, use: MonthUse = 'request'): Admission {
    const a = super.take(credential, limits, now, month, use);
    if (a.ok) {
      this.recent.push([credential, now]);
      if (a.monthCharged) this.changed(credential, month.start);
    }
    return a;
  }

  override refund(credential: string, month: MonthWindow): void {
    super.refund(credential, month);
    this.changed(credential, month.start);
  }

  private changed(credential: string, start: number): void {
    const from = this.dirty.get(credential);
    if (from === undefined || start < from) this.dirty.set(credential, start);
  }

  /** Writes what changed since the last save; one save at a time (a flush during one waits for it). */
  flush(): Promise<void> {
    this.saving ??= this.save().finally(() => (this.saving = null));
    return this.saving;
  }

  /**
   * The requests counted and the months changed since the last save, SLICE of each to a transaction with the event
   * loop free between (the months in key order, so that a transaction writes few pages); what fails is kept for the
   * next. Then the minute's rows that are a minute old go.
   */
  private async save(): Promise<void> {
    const changed = [...this.dirty].sort(([a], [b]) => (a < b ? -1 : 1));
    const recent = this.recent;
    [this.dirty, this.recent] = [new Map(), []];
    let [months, rows] = [0, 0];
    try {
      while (months < changed.length || rows < recent.length) {
        this.db.exec('BEGIN');
        try {
          for (const [credential, from] of changed.slice(months, months + SLICE))
            writeCounts(this.put, credential, this.counts.get(credential)!, from);
          let last: number | bigint = 0;
          for (const [credential, at] of recent.slice(rows, rows + SLICE)) last = this.put.minute.run(credential, at).lastInsertRowid;
          this.db.exec('COMMIT');
          if (rows < recent.length) this.marks.push([last, recent[Math.min(rows + SLICE, recent.length) - 1]![1]]);
        } catch (e) {
          this.db.exec('ROLLBACK');
          throw e;
        }
        [months, rows] = [months + SLICE, rows + SLICE];
        await new Promise((r) => setImmediate(r));
      }
      let upTo: number | bigint | undefined;
      while (this.marks.length && this.marks[0]![1] <= Date.now() - MINUTE_MS) upTo = this.marks.shift()![0];
      if (upTo !== undefined) this.db.prepare('DELETE FROM minutes WHERE rowid <= ?').run(upTo);
    } catch (e) {
      for (const [credential, from] of changed.slice(months)) this.changed(credential, from);
      this.recent = recent.slice(rows).concat(this.recent);
      if (Date.now() - this.lastProblem >= MINUTE_MS) {
        this.lastProblem = Date.now();
        this.log(`quotas: cannot save to ${this.file} (${(e as Error).message}); the counts are kept in memory and saved once it can`);
      }
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.saving;
    await this.flush();
    // The WAL folded into the database: a copy of the file alone is then whole.
    this.db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    this.db.close();
    await this.lock.release();
  }
}

/** The database at `file`, checked, made if need be (importing a quota file of an earlier release), with its witness. */
function prepare(file: string, o: SqliteOptions, log: (m: string) => void): DatabaseSync {
  const legacy = o.legacy ?? file;
  // A database already at `file` is the counts: a quota file left beside it by an import cut short is not read again.
  const importing = isLegacyQuotaFile(legacy) && (legacy === file || !existsSync(file));
  let db: DatabaseSync;
  try {
    db = importing ? importLegacy(legacy, file, o, log) : checkedDatabase(file);
  } catch (e) {
    if (!(e instanceof QuotaStoreDamaged) || !o.discardDamaged) throw e;
    db = salvage(file, log);
  }
  let id = db.prepare(`SELECT value FROM meta WHERE key = 'id'`).get()?.value as string | undefined;
  if (!id) db.prepare(`INSERT INTO meta VALUES ('id', ?), ('schema', '1')`).run((id = randomUUID()));
  if (readWitness(file) !== id)
    writeFileSync(witnessOf(file), JSON.stringify({ database: id, file, created: new Date().toISOString() }) + '\n');
  db.prepare('DELETE FROM months WHERE month < ?').run(monthName(monthsAfter(monthOf(Date.now()).start, -MONTHS_KEPT)));
  db.prepare('DELETE FROM minutes WHERE at <= ?').run(Date.now() - MINUTE_MS);
  return db;
}

/** The counts of a damaged database that still read, in a new one at `file`; the damaged files moved aside, never deleted. */
function salvage(file: string, log: (m: string) => void): DatabaseSync {
  let counts = new Map<string, Counts>();
  try {
    const old = new DatabaseSync(file, { readOnly: true });
    counts = readCounts(old, Date.now(), (e) => log(`quotas: ${file}: reading stopped at the damage (${e.message})`));
    old.close();
  } catch (e) {
    log(`quotas: ${file}: nothing in it reads (${(e as Error).message})`);
  }
  const aside = asideName(file, 'damaged');
  mkdirSync(aside);
  for (const f of [file, `${file}-wal`, `${file}-shm`, witnessOf(file)]) if (existsSync(f)) renameSync(f, `${aside}/${basename(f)}`);
  const db = filled(file, counts);
  log(
    `quotas: --discard-damaged-quotas: counting on from the ${counts.size} credentials that still read; the damaged files are in ${aside}`,
  );
  return db;
}

/** A new database at `file` holding `counts`. */
function filled(file: string, counts: Map<string, Counts>): DatabaseSync {
  const db = openDatabase(file, false);
  const put = writer(db);
  db.exec('BEGIN');
  for (const [credential, c] of counts) writeCounts(put, credential, c);
  db.exec('COMMIT');
  return db;
}

/**
 * A quota file of an earlier release, imported exactly into a new database at `file`: written whole under another
 * name first, then the old files linked into a folder beside (kept, never deleted) and the database renamed into place.
 */
function importLegacy(legacy: string, file: string, o: SqliteOptions, log: (m: string) => void): DatabaseSync {
  const { counts, notes } = readLegacyQuotaFile(legacy, { salvage: o.discardDamaged });
  const next = `${file}.importing`;
  for (const f of [next, `${next}-wal`, `${next}-shm`]) rmSync(f, { force: true });
  const db = filled(next, counts);
  db.prepare(`INSERT INTO meta VALUES ('imported_from', ?)`).run(legacy);
  db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  db.close();
  // Linked aside first, so that a crash at any point leaves either the old files in place or the database whole.
  const aside = asideName(legacy, 'before-sqlite');
  mkdirSync(aside);
  const files = legacyFiles(legacy);
  for (const f of files) linkSync(f, `${aside}/${basename(f)}`);
  renameSync(next, file);
  for (const f of files) if (f !== file) rmSync(f, { force: true });
  for (const note of notes) log(`quotas: ${note}`);
  log(`quotas: imported the counts of ${counts.size} credentials from ${legacy} into ${file}; the old files are kept in ${aside}`);
  return checkedDatabase(file);
}
