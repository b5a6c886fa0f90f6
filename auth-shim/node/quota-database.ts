/**
 * The quota database as a file (decision 97): made, checked and read; the store that counts in it is quota-sqlite.ts.
 * One SQLite database (`node:sqlite`; its tables are in docs/shim.md). Damage is never read as "no counts": a database
 * that fails SQLite's integrity check, or is gone or empty while its witness (`<file>.id`) says it held counts, is
 * refused (QuotaStoreDamaged, exit 3) unless the operator asks to start from the rows that still read. A quota file
 * of an earlier release is imported here, and the charges a stop could not save (`<file>.unsaved-<time>.json`) taken in.
 */
import { randomUUID } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { chargeCount, MINUTE_MS, monthName, monthOf, monthsAfter, MONTHS_KEPT, newCounts, recordCharge, type Counts } from '../quota.js';
import { isLegacyQuotaFile, legacyFiles, readLegacyQuotaFile } from './quota-import.js';

/** A database that cannot be trusted to hold every count: named, with the way on (serve and usage exit 3). */
export class QuotaStoreDamaged extends Error {}
/** The database cannot be made or written where it is (serve's exit 3): names it, the system's reason, the way on. */
export class QuotaStoreUnwritable extends Error {}

/** Whether SQLite refused for a lock another connection holds (SQLITE_BUSY, SQLITE_LOCKED): no damage, wait. */
export const isBusy = (e: unknown): boolean => [5, 6].includes(((e as { errcode?: number } | null)?.errcode ?? 0) & 0xff);

/** `e` as QuotaStoreUnwritable when the system refused it (or SQLite could not open, write or grow the file). */
export function unwritable(file: string, e: unknown): unknown {
  const { code, errcode } = (e ?? {}) as { code?: unknown; errcode?: unknown };
  const refused = (typeof code === 'string' && /^E[A-Z]+$/.test(code)) || [8, 10, 13, 14].includes((errcode as number) & 0xff); // READONLY, IOERR, FULL, CANTOPEN (and their extended codes)
  return refused
    ? new QuotaStoreUnwritable(
        `${file}: the quota database cannot be opened or written there (${(e as Error).message}); the user serve and usage run as must be able to read and write it and its folder, with room to grow`,
        { cause: e },
      )
    : e;
}

const TABLES = `
CREATE TABLE IF NOT EXISTS months (credential TEXT NOT NULL, month TEXT NOT NULL, requests INTEGER NOT NULL,
  through INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (credential, month)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS charges (id INTEGER PRIMARY KEY AUTOINCREMENT, saved INTEGER NOT NULL, charges TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
`;
/**
 * One charge as `charges` holds it: `[credential, time]` a request (its minute and the month of its time),
 * `[credential, time, "minute"]` a request counted in the minute alone, `[credential, month start, "refund"]` a month's
 * charge returned.
 */
export type Logged = [string, number] | [string, number, 'minute' | 'refund'];
const isCharge = (e: unknown): boolean =>
  Array.isArray(e) &&
  typeof e[0] === 'string' &&
  Number.isFinite(e[1]) &&
  (e.length === 2 || (e.length === 3 && (e[2] === 'minute' || e[2] === 'refund')));
const witnessOf = (file: string) => `${file}.id`;
/**
 * What an operator can do about a damaged database, said with each way it is found damaged. A restore moves the -wal
 * aside too (SQLite would replay it onto the copy), and the witness (it would refuse a copy older than the last save:
 * moving it says the counts after the copy are let go).
 */
const wayOn = (file: string) =>
  `restore it from a copy (stop serve first; move it, its -wal, -shm and witness ${witnessOf(file)} aside; put the copy in its place), or start serve once with --discard-damaged-quotas, which keeps the rows that still read and moves the damaged files aside`;
export const asideName = (file: string, what: string) => `${file}.${what}-${new Date().toISOString().replace(/[:.]/g, '-')}`;

/** The `names` that are there moved into a new folder `asideName(file, what)`, never deleted; the folder, or null. */
function setAside(file: string, what: string, names: string[]): string | null {
  const there = names.filter((f) => existsSync(f));
  if (!there.length) return null;
  const aside = asideName(file, what);
  mkdirSync(aside);
  for (const f of there) renameSync(f, `${aside}/${basename(f)}`);
  return aside;
}

/**
 * The witness beside `file`: database `id` and the last `charges` row saved in it (`saved`, kept when not given),
 * written whole when either changes. A database behind its witness lost rows without a trace (its `-wal` deleted
 * after a crash): `checkedDatabase` refuses it.
 */
export function witnessed(file: string, id: string, saved?: number): void {
  let w: Witness | null = null;
  try {
    w = readWitness(file);
  } catch {
    // Damaged under a running serve, whose database is whole: written again.
  }
  const kept = w?.database === id ? w : null;
  saved ??= kept?.saved;
  if (!kept || kept.saved !== saved)
    writePrivately(
      witnessOf(file),
      JSON.stringify({ database: id, file, created: kept?.created ?? new Date().toISOString(), saved }) + '\n',
    );
}

/** `text` written whole to `file` (then renamed into place), readable by its owner alone: it names credentials. */
export function writePrivately(file: string, text: string): void {
  try {
    writeFileSync(`${file}.tmp`, text, { mode: 0o600 });
  } catch (e) {
    rmSync(`${file}.tmp`, { force: true }); // a full disk leaves no empty file behind
    throw e;
  }
  renameSync(`${file}.tmp`, file);
}

export interface RecoveryOptions {
  /** How long to wait for another connection's lock on the database (SQLite's busy timeout; default 5 s). */
  busyMs?: number;
  /** `serve --discard-damaged-quotas`: start from the rows still readable, moving the damaged files aside. */
  discardDamaged?: boolean;
  /** A quota file of an earlier release to import on the first start (default: `file` itself, when it is one). */
  legacy?: string;
}

/** Opens `file` and checks it whole; throws QuotaStoreDamaged naming it and the way on. */
export function checkedDatabase(file: string, readOnly = false, busyMs = 5_000): DatabaseSync {
  const witness = readWitness(file);
  if (!existsSync(file) || statSync(file).size === 0) {
    if (witness)
      throw new QuotaStoreDamaged(
        `${file}: the quota database is ${existsSync(file) ? 'empty' : 'gone'}, but ${witnessOf(file)} says it held the counts of database ${witness.database} since it was made; ${wayOn(file)}`,
      );
    // A crash's -wal whose database was moved away: SQLite would empty it as it made a new database beside it.
    if (existsSync(`${file}-wal`) && statSync(`${file}-wal`).size > 0)
      throw new QuotaStoreDamaged(
        `${file}: the quota database is ${existsSync(file) ? 'empty' : 'gone'}, but ${file}-wal beside it holds counts of it; move the -wal and -shm to the database they belong to (or aside, to start from zero on purpose)`,
      );
    return openDatabase(file, readOnly, busyMs);
  }
  let db: DatabaseSync | undefined;
  try {
    // Checked read-only: a connection that can write folds a -wal into the file, and deletes it, as it closes, and a
    // refusal must leave the damaged files as they were.
    db = openDatabase(file, true, busyMs);
    const check = db
      .prepare('PRAGMA integrity_check')
      .all()
      .map((r) => String(Object.values(r)[0]));
    if (check.join() !== 'ok') throw new Error(check.slice(0, 3).join('; '));
    const id = has(db, 'meta')
      ? ((db.prepare(`SELECT value FROM meta WHERE key = 'id'`).get()?.value as string | undefined) ?? null)
      : null;
    if (witness && id !== witness.database) throw new Error(`it is database ${id}, where ${witnessOf(file)} names ${witness.database}`);
    const last = lastRowOf(db);
    if (witness?.saved !== undefined && last < witness.saved)
      throw new Error(
        `its charges end at row ${last}, where ${witnessOf(file)} says row ${witness.saved} was saved: the rows after are gone (its -wal deleted or cut after a crash: put it back whole if you have it; or an older copy put in its place)`,
      );
    if (readOnly) return db;
    db.close();
    return (db = openDatabase(file, false, busyMs));
  } catch (e) {
    db?.close();
    const refused = unwritable(file, e);
    if (refused !== e || isBusy(e)) throw refused;
    throw new QuotaStoreDamaged(`${file}: the quota database fails its check (${(e as Error).message}); ${wayOn(file)}`, { cause: e });
  }
}

function openDatabase(file: string, readOnly: boolean, busyMs = 5_000): DatabaseSync {
  const made = !readOnly && !existsSync(file);
  const db = new DatabaseSync(file, { readOnly });
  // As private as the key file (webhook secrets): SQLite gives its WAL the database's mode.
  if (made) chmodSync(file, 0o600);
  db.exec(`PRAGMA busy_timeout = ${Math.max(0, Math.round(busyMs))}`);
  if (readOnly) return db;
  // Pages of 64 KB: a row of charges (about 85 bytes each) takes a few pages rather than a long chain of them. The
  // WAL folded back every 64 pages (4 MB, as SQLite's default of 1,000 4 KB pages), so no checkpoint stalls long.
  db.exec(`PRAGMA page_size = 65536; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 64;
    ${TABLES}`);
  // A database of the first release (a row per request in `minutes`, months written at every save, 4 KB pages): its
  // minute goes into `charges` as minute-only charges, its months, complete, count nothing after.
  if (has(db, 'minutes')) {
    if (!db.prepare(`SELECT 1 FROM pragma_table_info('months') WHERE name = 'through'`).get())
      db.exec('ALTER TABLE months ADD COLUMN through INTEGER NOT NULL DEFAULT 0');
    db.exec(`BEGIN; INSERT INTO charges (saved, charges) SELECT max(at), json_group_array(json_array(credential, at, 'minute'))
      FROM minutes HAVING count(*) > 0; DROP TABLE minutes; COMMIT`);
    db.exec('PRAGMA journal_mode = DELETE; PRAGMA page_size = 65536; VACUUM; PRAGMA journal_mode = WAL');
  }
  return db;
}

const has = (db: DatabaseSync, table: string) => !!db.prepare(`SELECT 1 FROM sqlite_master WHERE name = ?`).get(table);

interface Witness {
  database: string;
  created?: string;
  saved?: number;
}
/** The witness beside `file`, or null where there is none; one that does not read is damage (it would check nothing). */
function readWitness(file: string): Witness | null {
  const w = witnessOf(file);
  let read: Partial<Witness> | null;
  try {
    read = JSON.parse(readFileSync(w, 'utf8')) as Partial<Witness> | null;
  } catch (e) {
    if ((e as { code?: string }).code === 'ENOENT') return null;
    // Not the parser's words, which quote the file's bytes (whatever garbled it wrote).
    const why = e instanceof SyntaxError ? 'it is not JSON' : (e as Error).message;
    throw new QuotaStoreDamaged(`${w}: the quota database's witness does not read (${why}); ${witnessWay(file)}`);
  }
  if (typeof read?.database !== 'string')
    throw new QuotaStoreDamaged(`${w}: the quota database's witness names no database; ${witnessWay(file)}`);
  if (read.saved !== undefined && !(Number.isSafeInteger(read.saved) && read.saved >= 0))
    throw new QuotaStoreDamaged(`${w}: the quota database's witness names no row saved; ${witnessWay(file)}`);
  return { ...read, database: read.database };
}
const witnessWay = (file: string) =>
  `it says which database the counts of ${file} are in and how far they were saved: put back the one serve wrote, or move it aside to count on from the database as it is`;

/** The last `charges` row ever written (AUTOINCREMENT keeps it after the rows go). */
const lastRowOf = (db: DatabaseSync): number =>
  has(db, 'sqlite_sequence') ? Number(db.prepare(`SELECT max(seq) AS n FROM sqlite_sequence WHERE name = 'charges'`).get()?.n ?? 0) : 0;

/** The credentials whose months rows are behind the charges logged after them, and the earliest month changed. */
export interface Behind {
  credentials: Set<string>;
  from: number;
}
export const noneBehind = (): Behind => ({ credentials: new Set(), from: Infinity });

/**
 * Each credential's counts as the database holds them: its months rows, then the charges after each row's `through`
 * (every request's time, for the minute). With `upTo`, damage ends the reading, keeping what was read before it.
 * With `unsaved` (usage), the files of charges a stop could not save that no start has taken in yet too (a start
 * takes them in after it reads, so that a salvage does not count them twice).
 */
export function readCounts(
  db: DatabaseSync,
  file: string,
  { upTo, unsaved = false }: { upTo?: (e: Error) => void; unsaved?: boolean } = {},
): { counts: Map<string, Counts>; behind: Behind } {
  const month = monthOf(Date.now());
  const counts = new Map<string, Counts>();
  const through = new Map<string, number>();
  const behind = noneBehind();
  const of = (credential: string) => {
    let c = counts.get(credential);
    if (!c) counts.set(credential, (c = newCounts(month)));
    return c;
  };
  try {
    if (!has(db, 'months')) return { counts, behind }; // an empty file, read before serve made its tables
    const v1 = has(db, 'minutes'); // read-only, before the first start of this release (usage)
    for (const r of db
      .prepare(`SELECT credential, month, requests, ${v1 ? 0 : 'through'} AS through FROM months ORDER BY credential, month`)
      .iterate()) {
      const [y, m] = String(r.month).split('-').map(Number) as [number, number];
      const [start, c] = [Date.UTC(y, m - 1, 1), of(String(r.credential))];
      if (start === month.start) c.month = Number(r.requests);
      else if (start < month.start) c.past.push([start, Number(r.requests)]);
      through.set(`${String(r.credential)} ${start}`, Number(r.through));
    }
    const rows = v1
      ? db.prepare(`SELECT 0 AS id, json_group_array(json_array(credential, at, 'minute')) AS charges FROM minutes`).iterate()
      : db.prepare('SELECT id, charges FROM charges ORDER BY id').iterate();
    const count = (charges: unknown[], id: number, damaged: (why: string) => Error) => {
      for (const charge of charges) {
        if (!isCharge(charge)) throw damaged('holds something that is not a charge');
        const [credential, at, kind = 'request'] = charge as Logged;
        const start = kind === 'refund' ? at : monthOf(at).start;
        const counted = id <= (through.get(`${credential} ${start}`) ?? 0);
        if (counted && kind === 'refund') continue;
        if (!counted && kind !== 'minute') {
          behind.credentials.add(credential);
          behind.from = Math.min(behind.from, start);
        }
        recordCharge(of(credential), { now: at, month: { start, end: start }, kind: counted ? 'minute' : kind });
      }
    };
    for (const r of rows) {
      const id = Number(r.id);
      const damaged = (why: string, cause?: unknown) =>
        new QuotaStoreDamaged(`${file}: charges row ${id} ${why}; ${wayOn(file)}`, { cause });
      const charges = chargesIn(() => String(r.charges), damaged);
      count(charges, id, damaged);
    }
    if (unsaved) for (const f of unsavedFiles(file)) if (!taken(db, f)) count(readUnsaved(f), Infinity, (why) => unsavedDamaged(f, why));
  } catch (e) {
    if (!upTo) throw e;
    upTo(e as Error);
  }
  return { counts, behind };
}

/** Logs `charges` as rows of `charges`, SLICE to a row (a row stays a few pages); returns the last row's id. */
export function logCharges(db: DatabaseSync, charges: Logged[], last: number): number {
  const insert = db.prepare('INSERT INTO charges (saved, charges) VALUES (?, ?)');
  for (let i = 0; i < charges.length; i += SLICE)
    last = Number(insert.run(Date.now(), JSON.stringify(charges.slice(i, i + SLICE))).lastInsertRowid);
  return last;
}
/** Charges to a row, and to a transaction of a running store's save: about a millisecond's work. */
export const SLICE = 2_000;

export function transaction(db: DatabaseSync, write: () => void, begin: 'BEGIN' | 'BEGIN IMMEDIATE' = 'BEGIN'): void {
  db.exec(begin);
  try {
    write();
    db.exec('COMMIT');
  } catch (e) {
    try {
      db.exec('ROLLBACK');
    } catch {
      // SQLite rolled back itself (a full disk, say): the error said is the write's, not "no transaction is active".
    }
    throw e;
  }
}

/** The months rows of the credentials `behind` from its earliest month, each naming the last row it counts (`through`). */
export function writeMonths(db: DatabaseSync, counts: Map<string, Counts>, behind: Behind, through: number): void {
  const put = db.prepare(
    'INSERT INTO months VALUES (?, ?, ?, ?) ON CONFLICT DO UPDATE SET requests = excluded.requests, through = excluded.through',
  );
  for (const credential of behind.credentials) {
    const c = counts.get(credential)!;
    for (const [start, n] of [...c.past, [c.monthStart, c.month] as const])
      if (start >= behind.from) put.run(credential, monthName(start), n, through);
  }
}

const taken = (db: DatabaseSync, f: string) =>
  has(db, 'meta') && !!db.prepare('SELECT 1 FROM meta WHERE key = ?').get(`taken:${basename(f)}`);
const unsavedDamaged = (f: string, why: string) =>
  new QuotaStoreDamaged(`${f}: ${why}, not the charges a stop left; move it aside to count without them`);
/** The JSON list `text()` gives, or `damaged` saying why not; with `whole`, each item checked as a charge first. */
function chargesIn(text: () => string, damaged: (why: string, cause?: unknown) => Error, whole = false): unknown[] {
  let charges: unknown;
  try {
    charges = JSON.parse(text());
  } catch (e) {
    throw damaged(`is not JSON (${(e as Error).message})`, e);
  }
  if (!Array.isArray(charges) || (whole && !charges.every(isCharge))) throw damaged('holds something that is not a charge');
  return charges;
}
function readUnsaved(f: string): unknown[] {
  const damaged = (why: string) => unsavedDamaged(f, why);
  return chargesIn(() => readFileSync(f, 'utf8'), damaged, true);
}
/** Writes the charges a stop could not save beside the database, whole (then renamed); returns the file. */
export function writeUnsaved(file: string, charges: Logged[]): string {
  const unsaved = `${asideName(file, 'unsaved')}.json`;
  writePrivately(unsaved, JSON.stringify(charges));
  return unsaved;
}
const unsavedFiles = (file: string): string[] =>
  readdirSync(dirname(file))
    .filter((n) => n.startsWith(`${basename(file)}.unsaved-`) && n.endsWith('.json'))
    .sort()
    .map((n) => join(dirname(file), n));

/** The database at `file`, checked, made if need be (importing a quota file of an earlier release), with its witness. */
export function prepare(file: string, o: RecoveryOptions, log: (m: string) => void): DatabaseSync {
  const legacy = o.legacy ?? file;
  // A database already at `file` is the counts: a quota file left beside it by an import cut short is not read again.
  const importing = isLegacyQuotaFile(legacy) && (legacy === file || !existsSync(file));
  let db: DatabaseSync | undefined;
  try {
    db = importing ? importLegacy(legacy, file, o, log) : checkedDatabase(file, false, o.busyMs);
    // A row that does not read (its pages pass SQLite's check) is damage too, which the salvage reads up to.
    if (o.discardDamaged && !importing) readCounts(db, file);
  } catch (e) {
    if (!(e instanceof QuotaStoreDamaged) || !o.discardDamaged) throw e;
    db?.close();
    db = salvage(file, log);
  }
  try {
    let id = db.prepare(`SELECT value FROM meta WHERE key = 'id'`).get()?.value as string | undefined;
    if (!id) db.prepare(`INSERT INTO meta VALUES ('id', ?)`).run((id = randomUUID()));
    db.prepare(`INSERT INTO meta VALUES ('schema', '2') ON CONFLICT DO UPDATE SET value = excluded.value`).run();
    witnessed(file, id);
    db.prepare('DELETE FROM months WHERE month < ?').run(monthName(monthsAfter(monthOf(Date.now()).start, -MONTHS_KEPT)));
    // What a stop could not save, logged as a row of charges once (`meta` names each file taken), then removed.
    for (const f of unsavedFiles(file)) {
      const charges = readUnsaved(f);
      transaction(db, () => {
        if (taken(db, f)) return;
        logCharges(db, charges as Logged[], 0);
        db.prepare('INSERT INTO meta VALUES (?, ?)').run(`taken:${basename(f)}`, new Date().toISOString());
      });
      rmSync(f);
      log(`quotas: took in ${chargeCount(charges.length)} a stop could not save, from ${f}`);
    }
  } catch (e) {
    db.close();
    throw e;
  }
  return db;
}

/** The counts `db` holds, its months rows brought up to every charge (a crash leaves them behind); charges a minute old then go. */
export function caughtUp(db: DatabaseSync, file: string): { counts: Map<string, Counts>; last: number } {
  const [{ counts, behind }, last] = [readCounts(db, file), lastRowOf(db)];
  transaction(db, () => {
    writeMonths(db, counts, behind, last);
    db.prepare('DELETE FROM charges WHERE saved <= ?').run(Date.now() - MINUTE_MS);
  });
  return { counts, last };
}

/**
 * The database `db` has open, written again at `file`, which was removed or replaced under serve (a stop would have
 * lost every count in it), by SQLite itself (`VACUUM INTO`); what is at `file` now is moved aside. With `walOnly` (its
 * `-wal` removed under serve) the pages only `db` still reaches are folded in instead, unless a reader keeps them from
 * folding. Closes `db`.
 */
export function restored(db: DatabaseSync, file: string, log: (m: string) => void, walOnly = false): DatabaseSync {
  if (walOnly && db.prepare('PRAGMA wal_checkpoint(TRUNCATE)').get()?.busy === 0) {
    db.close();
    log(`quotas: ${file}-wal was removed while serve ran; its pages were folded into the database first, nothing lost`);
    return openDatabase(file, false);
  }
  const copy = `${file}.restoring`;
  rmSync(copy, { force: true });
  try {
    db.exec(`VACUUM INTO '${copy.replaceAll("'", "''")}'`);
  } catch (e) {
    rmSync(copy, { force: true }); // pages it could not read (a file emptied under it): the save fails, said, and no copy stays
    throw e;
  }
  chmodSync(copy, 0o600);
  const replaced = existsSync(file);
  const emptied = replaced && statSync(file).size === 0;
  const aside = setAside(file, 'replaced', [file, `${file}-wal`, `${file}-shm`]);
  db.close();
  renameSync(copy, file);
  const again = openDatabase(file, false);
  witnessed(file, again.prepare(`SELECT value FROM meta WHERE key = 'id'`).get()?.value as string);
  const what = emptied
    ? `emptied (the empty file is in ${aside})`
    : replaced
      ? `replaced (what was there is in ${aside})`
      : `removed${aside ? ` (its -wal and -shm, left behind, are in ${aside})` : ''}`;
  log(`quotas: ${file} was ${what} while serve ran; written again from the database serve had open, nothing lost`);
  return again;
}

/**
 * The counts of a damaged database that still read, in a new one at `file`. The damaged files are moved aside first,
 * never deleted or changed, and read from a scratch copy: SQLite deletes the `-wal` of a database file it finds empty.
 */
function salvage(file: string, log: (m: string) => void): DatabaseSync {
  const aside = setAside(file, 'damaged', [file, `${file}-wal`, `${file}-shm`, witnessOf(file)]);
  let counts = new Map<string, Counts>();
  let old: DatabaseSync | undefined;
  const scratch = mkdtempSync(join(dirname(file), `.${basename(file)}.salvage-`));
  // The damage said without the way on, which this salvage is.
  const stopped = (what: string) => (e: Error) =>
    log(`quotas: ${file}: reading ${what} stopped at the damage (${e.message.replace(`; ${wayOn(file)}`, '')})`);
  try {
    for (const f of [file, `${file}-wal`])
      if (aside && existsSync(`${aside}/${basename(f)}`)) copyFileSync(`${aside}/${basename(f)}`, `${scratch}/${basename(f)}`);
    old = new DatabaseSync(`${scratch}/${basename(file)}`, { readOnly: true });
    ({ counts } = readCounts(old, file, { upTo: stopped('the counts') }));
  } catch (e) {
    log(`quotas: ${file}: nothing in it reads (${(e as Error).message})`);
  }
  let db: DatabaseSync;
  let beside: string[] = [];
  try {
    db = filled(file, counts);
    if (old) beside = carryOver(old, db, stopped);
  } finally {
    old?.close();
    rmSync(scratch, { recursive: true, force: true });
  }
  log(
    `quotas: --discard-damaged-quotas: counting on from the ${counts.size} credentials that still read${beside.length ? `, with ${beside.join(', ')}` : ''}; the damaged files are in ${aside}`,
  );
  return db;
}

/**
 * The tables a salvaged database held beside the counts (the webhook store's endpoints and attempts), copied from
 * `old` into `db` with their indexes, each as far as its rows read: a customer's endpoint is not lost with a page.
 */
function carryOver(old: DatabaseSync, db: DatabaseSync, stopped: (what: string) => (e: Error) => void): string[] {
  let schema: Record<string, unknown>[];
  try {
    schema = old
      .prepare(
        `SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'
          AND tbl_name NOT IN ('months', 'charges', 'meta') ORDER BY type = 'index'`,
      )
      .all();
  } catch (e) {
    stopped('the tables beside the counts')(e as Error);
    return [];
  }
  const kept: string[] = [];
  for (const { type, name, sql } of schema) {
    db.exec(String(sql));
    if (type !== 'table') continue;
    let n = 0;
    transaction(db, () => {
      let insert: ReturnType<DatabaseSync['prepare']> | undefined;
      try {
        for (const row of old.prepare(`SELECT * FROM "${String(name)}"`).iterate()) {
          const values = Object.values(row);
          insert ??= db.prepare(`INSERT INTO "${String(name)}" VALUES (${values.map(() => '?').join(', ')})`);
          insert.run(...values);
          n++;
        }
      } catch (e) {
        stopped(`${String(name)} after ${n} rows`)(e as Error);
      }
    });
    kept.push(`${n} row${n === 1 ? '' : 's'} of ${String(name)}`);
  }
  return kept;
}

/** A new database at `file` holding `counts`: their months, and their minutes as charges of the minute alone. */
function filled(file: string, counts: Map<string, Counts>): DatabaseSync {
  const db = openDatabase(file, false);
  const minute: Logged[] = [];
  for (const [credential, c] of counts) for (const at of c.minute) minute.push([credential, at, 'minute']);
  transaction(db, () => {
    writeMonths(db, counts, { credentials: new Set(counts.keys()), from: -Infinity }, 0);
    logCharges(db, minute, 0);
  });
  return db;
}

/** A quota file of an earlier release imported exactly into a new database at `file`; the old files kept beside. */
function importLegacy(legacy: string, file: string, o: RecoveryOptions, log: (m: string) => void): DatabaseSync {
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
