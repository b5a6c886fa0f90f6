/**
 * The disk store's files: a snapshot of every credential's counts, and journals of what was counted since.
 *
 *   <file>              the snapshot, JSON: {"schema": 2, "journal": G, "credentials": {credential: counts}}
 *   <file>.journal.G    what was counted after it, in binary records (below), appended once a second
 *   <file>.bak          the snapshot before it (the last good copy, a file of its own), whose journals are kept too
 *
 * The counts are the snapshot's, then each journal's records from generation G on, in order, each applied by the
 * quota rule's own `recordCharge`. A record is a few bytes written on the request path into memory, and a flush is
 * one write of what accumulated: its cost is what was counted since the last one, never every credential. A
 * compaction writes a new snapshot (a slice of credentials per turn of the event loop, to a temporary file, synced,
 * renamed over the old one after a link keeps that as `.bak`, which the rename then leaves the only name of the old
 * one), continuing at journal G+1, and removes the journals no snapshot needs. A start that writes a snapshot keeps
 * a copy of it as `.bak`, never a link: damage to the snapshot in place must not reach its copy.
 *
 * A journal starts with MAGIC, then frames: a u32 length and the CRC-32 of the payload, then the payload, whole
 * records (all little-endian): DEFINE (1, u32 id, u16 bytes, the credential in UTF-8, once per credential per
 * journal), REQUEST (2, u32 id, f64 time, f64 month start: the minute and the month), MINUTE (3, u32 id, f64 time:
 * the minute alone) and REFUND (4, u32 id, f64 month start: a 304 returns its month's charge).
 *
 * Damage is never read as "no counts" (that would make a cut file free usage for everyone): a snapshot that does not
 * parse, or a frame whose checksum fails with more after it, is refused, naming the file. Only the last frame of the
 * last journal may be cut short: a crash in the middle of an append leaves that, and the frames before it hold
 * every earlier flush.
 */
import {
  closeSync,
  existsSync,
  fsyncSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { copyFile, link, open, rename, unlink } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { crc32 } from 'node:zlib';
import { z } from 'zod';
import { monthOf, recordCharge, type Counts } from '../quota.js';

const SCHEMA = 2;
export const journalFile = (file: string, generation: number): string => `${file}.journal.${generation}`;
const backupFile = (file: string): string => `${file}.bak`;

/** The first bytes of every journal: what it is, and the version of its records. */
export const MAGIC = Buffer.from('rr-quota-journal 1\n');
const Record = { Define: 1, Request: 2, Minute: 3, Refund: 4 } as const;
const FRAME_HEAD = 8;

/** A quota file that cannot be read: named, with how to recover (serve exits 3 with it). */
export class QuotaFileDamaged extends Error {
  constructor(
    readonly file: string,
    where: string,
    reason: string,
  ) {
    super(
      `${where}: ${reason}. The counts in ${file} cannot be read, and a damaged quota file is never taken for empty counts: ` +
        `restore it (${backupFile(file)} is the copy before the last save, and its journals are kept beside it: ` +
        `stop serve, then cp ${backupFile(file)} ${file}), or start from what can still be read with serve --discard-damaged-quotas, ` +
        'which moves the damaged files aside',
    );
  }
}

const CountsShape = z.object({
  minute: z.array(z.number()),
  monthStart: z.number().int(),
  month: z.number().int().min(0),
  past: z.array(z.tuple([z.number().int(), z.number().int().min(0)])).optional(),
});
const Snapshot = z.discriminatedUnion('schema', [
  z.object({ schema: z.literal(SCHEMA), journal: z.number().int().min(1), credentials: z.record(z.string(), CountsShape) }),
  // The first format: one document rewritten whole at every save, without monthly totals.
  z.object({ schema: z.literal(1), credentials: z.record(z.string(), CountsShape) }),
]);

/** The first problem zod found, as `credentials.key:ab12.month: expected ...`. */
function problem(error: z.ZodError): string {
  const issue = error.issues[0]!;
  return `${issue.path.length ? `${issue.path.join('.')}: ` : ''}${issue.message}`;
}

export interface QuotaFileState {
  counts: Map<string, Counts>;
  /**
   * The generation of the snapshot the counts continue, and of the journal to append to. 0: the counts are to be
   * written as a new snapshot first (none yet, one of the first format, or salvaged), continuing at `generation`.
   */
  snapshotGeneration: number;
  generation: number;
  /** Bytes of that journal holding whole frames: a frame cut short by a crash is cut off before the next append. */
  journalBytes: number;
  /** Bytes of the journals since the snapshot, and of the snapshot: when a compaction pays. */
  journalTotal: number;
  snapshotBytes: number;
  /** The snapshot is of the first format (schema 1): kept as `<file>.schema-1` when it is written anew. */
  legacy: boolean;
  /** What was set aside as it was read: a cut last frame; with `salvage`, every damaged file. */
  notes: string[];
  /** With `salvage`: the files that could not be read whole, to be moved aside. */
  damaged: string[];
}

/** The journal generations present beside `file`, ascending. */
function journalGenerations(file: string): number[] {
  const prefix = `${basename(file)}.journal.`;
  let names: string[];
  try {
    names = readdirSync(dirname(file));
  } catch {
    return [];
  }
  return names
    .filter((n) => n.startsWith(prefix) && /^\d+$/.test(n.slice(prefix.length)))
    .map((n) => Number(n.slice(prefix.length)))
    .sort((a, b) => a - b);
}

function readSnapshot(path: string): { credentials: Map<string, Counts>; generation: number; legacy: boolean; bytes: number } {
  const text = readFileSync(path, 'utf8');
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new Error(`not JSON (${(e as Error).message}); the file may have been cut short`, { cause: e });
  }
  const parsed = Snapshot.safeParse(doc);
  if (!parsed.success) throw new Error(`not a quota snapshot (${problem(parsed.error)})`);
  const credentials = new Map<string, Counts>();
  for (const [k, c] of Object.entries(parsed.data.credentials))
    credentials.set(k, { minute: c.minute, monthStart: c.monthStart, month: c.month, past: c.past ?? [] });
  const legacy = parsed.data.schema === 1;
  return { credentials, generation: parsed.data.schema === SCHEMA ? parsed.data.journal : 0, legacy, bytes: Buffer.byteLength(text) };
}

class JournalDamage extends Error {}

/**
 * Applies one journal's records to `state`; returns the bytes of whole frames. A frame that fails its checksum with
 * more after it, or a record that does not parse, is damage (thrown). The last frame cut short, or failing its
 * checksum where nothing follows it, is a crash in the middle of an append: allowed where `cutAllowed`.
 */
function replay(path: string, state: Map<string, Counts>, cutAllowed: boolean): { whole: number; cut: boolean } {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { whole: 0, cut: false };
    throw e;
  }
  // A crash between creating the file and writing its first bytes leaves it empty, or its start cut short.
  if (bytes.length < MAGIC.length && MAGIC.subarray(0, bytes.length).equals(bytes)) {
    if (bytes.length && !cutAllowed) throw new JournalDamage('it is cut short in its first bytes, and a later journal follows it');
    return { whole: 0, cut: bytes.length > 0 };
  }
  if (!bytes.subarray(0, MAGIC.length).equals(MAGIC)) throw new JournalDamage('it does not start as a quota journal');
  const names = new Map<number, string>();
  let at = MAGIC.length;
  let frame = 0;
  while (at < bytes.length) {
    frame++;
    const length = bytes.length - at >= FRAME_HEAD ? bytes.readUInt32LE(at) : -1;
    const end = at + FRAME_HEAD + length;
    const whole = length > 0 && end <= bytes.length && crc32(bytes.subarray(at + FRAME_HEAD, end)) === bytes.readUInt32LE(at + 4);
    if (!whole) {
      // Cut short, or failing its checksum with nothing after it: the append a crash interrupted.
      const last = length <= 0 || end >= bytes.length;
      if (last && cutAllowed) return { whole: at, cut: true };
      throw new JournalDamage(last ? `frame ${frame} is cut short, and a later journal follows it` : `frame ${frame} fails its checksum`);
    }
    try {
      applyFrame(bytes.subarray(at + FRAME_HEAD, end), names, state);
    } catch (e) {
      throw new JournalDamage(`frame ${frame}: ${(e as Error).message}`);
    }
    at = end;
  }
  return { whole: at, cut: false };
}

function applyFrame(p: Buffer, names: Map<number, string>, state: Map<string, Counts>): void {
  const counts = (id: number, monthStart: number) => {
    const credential = names.get(id);
    if (credential === undefined) throw new Error(`a record names credential ${id}, never defined`);
    let c = state.get(credential);
    if (!c) state.set(credential, (c = { minute: [], monthStart, month: 0, past: [] }));
    return c;
  };
  let at = 0;
  while (at < p.length) {
    const type = p[at]!;
    const id = p.readUInt32LE(at + 1);
    if (type === Record.Define) {
      const length = p.readUInt16LE(at + 5);
      names.set(id, p.toString('utf8', at + 7, at + 7 + length));
      at += 7 + length;
    } else if (type === Record.Request || type === Record.Minute) {
      const now = p.readDoubleLE(at + 5);
      const start = type === Record.Request ? p.readDoubleLE(at + 13) : monthOf(now).start;
      recordCharge(counts(id, start), { now, month: { start, end: start }, kind: type === Record.Request ? 'request' : 'minute' });
      at += type === Record.Request ? 21 : 13;
    } else if (type === Record.Refund) {
      const start = p.readDoubleLE(at + 5);
      recordCharge(counts(id, start), { now: 0, month: { start, end: start }, kind: 'refund' });
      at += 13;
    } else throw new Error(`unknown record ${type} at byte ${at}`);
  }
  if (at !== p.length) throw new Error('its last record runs past its end');
}

/**
 * What the store counted since its last flush, as journal records: written into memory as each request is counted,
 * and taken out whole by the flush. Credentials are named once per journal (DEFINE), then by number.
 */
export class JournalRecords {
  private buf = Buffer.allocUnsafe(64 * 1024);
  private used = FRAME_HEAD;
  private ids = new Map<string, number>();

  private room(n: number): void {
    if (this.used + n <= this.buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.used + n));
    this.buf.copy(bigger, 0, 0, this.used);
    this.buf = bigger;
  }

  private id(credential: string): number {
    let id = this.ids.get(credential);
    if (id !== undefined) return id;
    this.ids.set(credential, (id = this.ids.size));
    const length = Buffer.byteLength(credential);
    this.room(7 + length);
    this.buf[this.used] = Record.Define;
    this.buf.writeUInt32LE(id, this.used + 1);
    this.buf.writeUInt16LE(length, this.used + 5);
    this.buf.write(credential, this.used + 7);
    this.used += 7 + length;
    return id;
  }

  /** An admitted request: counted in the minute, and in the month starting at `monthStart` unless `minuteOnly`. */
  admitted(credential: string, now: number, monthStart: number, minuteOnly: boolean): void {
    const id = this.id(credential);
    this.room(21);
    this.buf[this.used] = minuteOnly ? Record.Minute : Record.Request;
    this.buf.writeUInt32LE(id, this.used + 1);
    this.buf.writeDoubleLE(now, this.used + 5);
    if (minuteOnly) this.used += 13;
    else {
      this.buf.writeDoubleLE(monthStart, this.used + 13);
      this.used += 21;
    }
  }

  refunded(credential: string, monthStart: number): void {
    const id = this.id(credential);
    this.room(13);
    this.buf[this.used] = Record.Refund;
    this.buf.writeUInt32LE(id, this.used + 1);
    this.buf.writeDoubleLE(monthStart, this.used + 5);
    this.used += 13;
  }

  /** Bytes waiting to be written. */
  get size(): number {
    return this.used - FRAME_HEAD;
  }

  /** The frame of what waits (length, checksum, records), to be written whole; null when nothing waits. */
  frame(): Buffer | null {
    if (this.used === FRAME_HEAD) return null;
    this.buf.writeUInt32LE(this.used - FRAME_HEAD, 0);
    this.buf.writeUInt32LE(crc32(this.buf.subarray(FRAME_HEAD, this.used)), 4);
    return this.buf.subarray(0, this.used);
  }

  /** The frame was written: what waited is on disk. */
  written(): void {
    this.used = FRAME_HEAD;
  }

  /** A new journal: credentials are named again in it. */
  startJournal(): void {
    this.used = FRAME_HEAD;
    this.ids = new Map();
  }
}

/**
 * The counts in `file` and its journals, or null when there is no file yet. Read-only: `usage` reads a file that a
 * running `serve` writes, and never takes its lock. Damage throws QuotaFileDamaged, unless `salvage`: then what is
 * still readable is kept (the snapshot, else the copy before it; then each journal up to its damage) and the
 * damaged files are listed.
 */
export function readQuotaFile(file: string, { salvage = false } = {}): QuotaFileState | null {
  // A compaction between reading the snapshot and its journals replaces the snapshot: read again.
  for (let attempt = 0; ; attempt++) {
    const before = identity(file);
    const state = readOnce(file, salvage);
    if (identity(file) === before || attempt === 4) return state;
  }
}

function identity(file: string): string {
  try {
    const st = statSync(file);
    return `${st.ino}:${st.size}:${st.mtimeMs}`;
  } catch {
    return 'absent';
  }
}

function readOnce(file: string, salvage: boolean): QuotaFileState | null {
  const generations = journalGenerations(file);
  const notes: string[] = [];
  const damaged: string[] = [];
  let snapshot: ReturnType<typeof readSnapshot> | null;
  try {
    snapshot = readSnapshot(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
      if (!generations.length) return null;
      if (!salvage)
        throw new QuotaFileDamaged(file, file, `it is missing, but its journal ${journalFile(file, generations.at(-1)!)} is there`);
      notes.push(`${file}: missing`);
    } else {
      if (!salvage) throw new QuotaFileDamaged(file, file, (e as Error).message);
      notes.push(`${file}: ${(e as Error).message}`);
      damaged.push(file);
    }
    try {
      snapshot = readSnapshot(backupFile(file));
      notes.push(`starting from ${backupFile(file)}`);
    } catch {
      snapshot = null;
    }
  }
  const state = snapshot?.credentials ?? new Map<string, Counts>();
  const top = generations.at(-1) ?? 0;
  // A snapshot of the first format had no journals: any beside it are older than it, and are not replayed.
  const from = snapshot ? (snapshot.legacy ? top + 1 : snapshot.generation) : (generations[0] ?? 1);
  const journals = generations.filter((g) => g >= from);
  // They follow the snapshot one by one (its own may be absent only when none follows: a crash before it was made).
  if (!salvage && journals.some((g, i) => g !== from + i))
    throw new QuotaFileDamaged(
      file,
      journalFile(file, from),
      `the journals beside it are ${journals.join(', ')}, not ${from} and the ones after it`,
    );
  let journalBytes = 0;
  let journalTotal = 0;
  for (const [i, g] of journals.entries()) {
    const path = journalFile(file, g);
    const last = i === journals.length - 1;
    let result: { whole: number; cut: boolean };
    try {
      result = replay(path, state, last || salvage);
    } catch (e) {
      if (!(e instanceof JournalDamage)) throw e;
      if (!salvage) throw new QuotaFileDamaged(file, path, e.message);
      // The records before the damage were applied; the journals after it count on from there.
      notes.push(`${path}: ${e.message}`);
      damaged.push(path);
      continue;
    }
    if (result.cut) {
      notes.push(`${path}: its last frame was cut short (a crash while saving); the ones before it are kept`);
      if (salvage && !last) damaged.push(path);
    }
    journalTotal += result.whole;
    if (last) journalBytes = result.whole;
  }
  // Counts to be written as a new snapshot (of the first format, or salvaged) continue in a journal of their own.
  const fresh = snapshot?.legacy || damaged.length > 0 || (salvage && !snapshot);
  return {
    counts: state,
    snapshotGeneration: snapshot && !fresh ? snapshot.generation : 0,
    generation: snapshot?.legacy ? from : fresh ? Math.max(top, from) + 1 : journals.length ? journals.at(-1)! : from,
    journalBytes: fresh ? 0 : journalBytes,
    journalTotal: fresh ? 0 : journalTotal,
    snapshotBytes: snapshot?.bytes ?? 0,
    legacy: snapshot?.legacy ?? false,
    notes,
    damaged,
  };
}

const head = (generation: number) => `{"schema":${SCHEMA},"journal":${generation},"credentials":{`;
const entry = (credential: string, c: Counts) => `${JSON.stringify(credential)}:${JSON.stringify(c)}`;

/**
 * Keeps the snapshot as it is now as `.bak`: a copy of its own, synced, never a second link to it, which damage to
 * the snapshot in place (a truncate, a disk error) would reach too (decision 71: the copy is what a damaged snapshot
 * is restored from).
 */
export function keepBackupSync(file: string): void {
  if (!existsSync(file)) return;
  const tmp = `${backupFile(file)}.${process.pid}.tmp`;
  const fd = openSync(tmp, 'w');
  try {
    writeFileSync(fd, readFileSync(file));
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, backupFile(file));
  syncFolder(file);
}

/**
 * Makes `.bak` a copy of its own where it is another link to the snapshot: a compaction links the old snapshot as
 * `.bak` just before the new one is renamed over it, so a crash between the two leaves one file under both names
 * (and so did a start before decision 71's copy). Returns whether it did.
 */
export function unlinkBackupFromSnapshotSync(file: string): boolean {
  try {
    const [a, b] = [statSync(file), statSync(backupFile(file))];
    if (a.ino !== b.ino || a.dev !== b.dev) return false;
  } catch {
    return false;
  }
  keepBackupSync(file);
  return true;
}

function syncFolder(file: string): void {
  try {
    const fd = openSync(dirname(file), 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // A folder that cannot be synced (some file systems refuse it): the rename is as durable as they make it.
  }
}

/**
 * Writes the snapshot at once (at start-up: a first file, a file of the first format, a salvage), replacing the
 * one there; returns its bytes.
 */
export function writeSnapshotSync(file: string, generation: number, state: Map<string, Counts>): number {
  const parts: string[] = [];
  for (const [k, c] of state) parts.push(entry(k, c));
  const text = `${head(generation)}${parts.join(',')}}}\n`;
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = openSync(tmp, 'w');
  try {
    writeFileSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
  syncFolder(file);
  return Buffer.byteLength(text);
}

/** Credentials serialised per turn of the event loop while a snapshot is written: requests are served in between. */
const SLICE = 100;

/**
 * Writes the snapshot a slice of credentials at a time, yielding to requests between slices, and the file's bytes
 * off the main thread. `stateOf` gives each credential's counts as they stood when the snapshot was cut (null: not
 * in it), so that the journal that follows it applies to exactly that.
 */
export async function writeSnapshot(
  file: string,
  generation: number,
  credentials: Iterable<string>,
  stateOf: (credential: string) => Counts | null,
): Promise<number> {
  const tmp = `${file}.${process.pid}.tmp`;
  const fh = await open(tmp, 'w');
  let bytes = 0;
  try {
    const write = async (text: string) => {
      const buf = Buffer.from(text);
      await fh.write(buf);
      bytes += buf.length;
    };
    await write(head(generation));
    let parts: string[] = [];
    let first = true;
    for (const k of credentials) {
      const c = stateOf(k);
      if (c) parts.push(entry(k, c));
      if (parts.length === SLICE) {
        await write((first ? '' : ',') + parts.join(','));
        [first, parts] = [false, []];
        await new Promise((r) => setImmediate(r));
      }
    }
    await write((first || !parts.length ? '' : ',') + parts.join(',') + '}}\n');
    await fh.datasync();
  } catch (e) {
    await fh.close().catch(() => {});
    await unlink(tmp).catch(() => {});
    throw e;
  }
  await fh.close();
  if (existsSync(file)) {
    const keep = `${backupFile(file)}.${process.pid}.tmp`;
    await link(file, keep).catch(() => copyFile(file, keep));
    await rename(keep, backupFile(file));
  }
  await rename(tmp, file);
  const dir = await open(dirname(file), 'r').catch(() => null);
  await dir
    ?.sync()
    .catch(() => {})
    .finally(() => dir.close());
  return bytes;
}

/** Removes the journals older than `generation` (no snapshot left needs them). */
export function removeJournalsBefore(file: string, generation: number): void {
  for (const g of journalGenerations(file)) {
    if (g >= generation) break;
    try {
      unlinkSync(journalFile(file, g));
    } catch {
      // gone already
    }
  }
}

/** Moves a damaged file aside, named with the time, so that nothing is deleted: `<path>.damaged-<time>`. */
export function setAside(path: string, at = new Date()): string {
  const aside = `${path}.damaged-${at.toISOString().replace(/[:.]/g, '-')}`;
  renameSync(path, aside);
  return aside;
}
