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
 * records (all little-endian): DEFINE (1, u32 id, u16 bytes, the credential in UTF-8), REQUEST (2, u32 id, f64 time,
 * f64 month start: the minute and the month), MINUTE (3, u32 id, f64 time: the minute alone) and REFUND (4, u32 id,
 * f64 month start: a 304 returns its month's charge). Each frame defines the credentials it counts before it gives
 * them by number (decision 86), so a frame reads without the ones before it; journals written before that defined
 * each credential once per journal, and a definition holds until another frame gives its number a name.
 *
 * Damage is never read as "no counts" (that would make a cut file free usage for everyone): a snapshot that does not
 * parse, or a frame that does not check (its length, its checksum, its records) with more after it, is refused,
 * naming the file, the frame and how to go on as the files on disk allow. Only the last frame of the last journal may
 * be cut short: a crash in the middle of an append leaves that, and the frames before it hold every earlier flush.
 * A salvage (`serve --discard-damaged-quotas`) keeps every frame that checks: past a damaged frame, reading goes on
 * at the next frame that checks, where the damaged one's length says or, that length being damaged too, at the first
 * position from which frames check again; what it drops is named in bytes.
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

/** A quota file that cannot be read: named, with how to go on as what is on disk allows (serve exits 3 with it). */
export class QuotaFileDamaged extends Error {
  constructor(
    readonly file: string,
    where: string,
    reason: string,
    recovery: string,
  ) {
    super(
      `${where}: ${reason}. The counts in ${file} cannot be read, and a damaged quota file is never taken for empty counts: ${recovery}`,
    );
  }
}

/** Journals `gs` (ascending) as `FILE.journal.3` or `FILE.journal.3 to FILE.journal.7`. */
function journalsNamed(file: string, gs: number[]): string {
  return gs.length === 1 ? journalFile(file, gs[0]!) : `${journalFile(file, gs[0]!)} to ${journalFile(file, gs.at(-1)!)}`;
}

/**
 * How to go on from a damaged quota file, as what is on disk allows (decision 71): restoring the copy is offered
 * only where it is there, reads, and would help (the damage is in the snapshot, not in a journal the copy needs
 * too); the salvage is described by what it keeps and drops. `copy` is null when the snapshot itself read, 'read'
 * when it did not and its copy did, else why the copy cannot stand in.
 */
function recovery(file: string, o: { copy: string | null; journals: number[]; drops: string[]; frames: number }): string {
  const bak = backupFile(file);
  const salvage = 'serve --discard-damaged-quotas';
  const keeping = `keeps the ${plural(o.frames, 'journal frame')} that check${o.frames === 1 ? 's' : ''} and drops only ${o.drops.join('; ')}`;
  if (o.copy === 'read' && !o.drops.length)
    return (
      `restore it (${bak} is the copy before the last save, and its journals are kept beside it: stop serve, then cp ${bak} ${file}), ` +
      `or start with ${salvage}, which counts on from that copy and its journals alike and moves the damaged file aside`
    );
  if (o.copy === null || o.copy === 'read')
    return (
      `${existsSync(bak) ? `restoring ${bak} would not help, since the damage is in a journal it needs too; ` : ''}` +
      `start with ${salvage}, which ${o.copy === 'read' ? `counts on from ${bak}, ` : ''}${keeping}, and moves the damaged files aside`
    );
  const from = o.journals.length ? `its journals alone (${journalsNamed(file, o.journals)})` : 'no counts at all (no journal is beside it)';
  return (
    `no copy of it can be restored (${bak} ${o.copy}): restore ${file} from a backup of your own, or start with ${salvage}, ` +
    `which counts on from ${from}, without what the snapshot held before them${o.drops.length ? `, ${keeping}` : ''}, ` +
    'and moves the damaged files aside'
  );
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
export function journalGenerations(file: string): number[] {
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

/** A record of a journal frame, parsed: what it says, before it is applied. */
type JournalRecord =
  | { type: typeof Record.Define; id: number; credential: string }
  | { type: typeof Record.Request | typeof Record.Minute; id: number; now: number; start: number | null }
  | { type: typeof Record.Refund; id: number; start: number };

/** A frame's payload as records; throws naming the first thing that is not a whole record. */
function parseRecords(p: Buffer): JournalRecord[] {
  const records: JournalRecord[] = [];
  let at = 0;
  const need = (n: number) => {
    if (at + n > p.length) throw new Error('its last record runs past its end');
  };
  while (at < p.length) {
    const type = p[at]!;
    need(5);
    const id = p.readUInt32LE(at + 1);
    if (type === Record.Define) {
      need(7);
      const length = p.readUInt16LE(at + 5);
      need(7 + length);
      const credential = p.toString('utf8', at + 7, at + 7 + length);
      // A name that is not UTF-8 is no credential the writer named: a frame found while resynchronising is held to it.
      if (Buffer.byteLength(credential) !== length) throw new Error(`the credential defined at byte ${at} is not UTF-8`);
      records.push({ type, id, credential });
      at += 7 + length;
    } else if (type === Record.Request || type === Record.Minute) {
      need(type === Record.Request ? 21 : 13);
      const now = p.readDoubleLE(at + 5);
      records.push({ type, id, now, start: type === Record.Request ? p.readDoubleLE(at + 13) : null });
      at += type === Record.Request ? 21 : 13;
    } else if (type === Record.Refund) {
      need(13);
      records.push({ type, id, start: p.readDoubleLE(at + 5) });
      at += 13;
    } else throw new Error(`unknown record ${type} at byte ${at}`);
  }
  return records;
}

/**
 * The frame at `at`: its end and records when it checks (its length fits the file, its CRC matches, its payload is
 * whole records); else why not, with its end when only its records are wrong (its bounds are then sound).
 */
function frameAt(
  bytes: Buffer,
  at: number,
): { ok: true; end: number; records: JournalRecord[] } | { ok: false; why: string; end?: number } {
  if (bytes.length - at < FRAME_HEAD) return { ok: false, why: 'is cut short' };
  const length = bytes.readUInt32LE(at);
  const end = at + FRAME_HEAD + length;
  if (length === 0) return { ok: false, why: 'has a length of 0' };
  if (end > bytes.length)
    return { ok: false, why: `is cut short (its length says ${length} bytes, ${bytes.length - at - FRAME_HEAD} follow)` };
  const payload = bytes.subarray(at + FRAME_HEAD, end);
  if (crc32(payload) !== bytes.readUInt32LE(at + 4)) return { ok: false, why: 'fails its checksum' };
  try {
    return { ok: true, end, records: parseRecords(payload) };
  } catch (e) {
    return { ok: false, why: (e as Error).message, end };
  }
}

/**
 * Where reading can go on after a frame at `at` that does not check (decision 86): where its own length says it
 * ends, when a frame that checks starts there; else the first later position where a frame checks and is followed
 * by the journal's end, another frame that checks, or a frame cut short at the end. A CRC-32 that matches and a
 * payload of whole records is what a frame is; asking its successor to check too makes a frame found by chance in
 * the damaged bytes out of reach. Null: no frame checks after the damage.
 */
function nextFrame(bytes: Buffer, at: number): number | null {
  const n = bytes.length;
  if (n - at >= FRAME_HEAD) {
    const end = at + FRAME_HEAD + bytes.readUInt32LE(at);
    if (end > at + FRAME_HEAD && end < n && frameAt(bytes, end).ok) return end;
  }
  const followed = (end: number) => {
    if (end === n) return true;
    const next = frameAt(bytes, end);
    return next.ok || (next.end === undefined && next.why.startsWith('is cut short'));
  };
  for (let p = at + 1; p + FRAME_HEAD < n; p++) {
    const type = bytes[p + FRAME_HEAD];
    if (type !== Record.Define && type !== Record.Request && type !== Record.Minute && type !== Record.Refund) continue;
    const f = frameAt(bytes, p);
    if (f.ok && followed(f.end)) return p;
  }
  return null;
}

/** What could not be read, and what reading on without it drops (frames, bytes or records, named). */
interface Damage {
  why: string;
  dropped: string;
}

/** One journal as read: what its frames counted went into the state; what could not be read is named in `damage`. */
interface JournalRead {
  /** Bytes up to the end of its last whole frame (where the next append goes). */
  whole: number;
  /** Its last frame was cut short (an append a crash interrupted): allowed only where `cutAllowed`. */
  cut: boolean;
  /** Frames read and applied. */
  frames: number;
  damage: Damage[];
}

const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;

/**
 * Applies one journal's records to `state`, frame by frame. A frame that does not check is damage: it is named,
 * with its bytes, and reading goes on at the next frame that checks (`nextFrame`), so one damaged frame costs that
 * frame alone; each frame names the credentials it counts (decision 86), so the ones after it still read. Where no
 * frame checks after the damage, the rest of the journal is the damage, unless `cutAllowed` (the last journal):
 * then it is the last frame cut short by a crash in the middle of an append, and `whole` ends before it.
 */
function replay(path: string, state: Map<string, Counts>, cutAllowed: boolean): JournalRead {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { whole: 0, cut: false, frames: 0, damage: [] };
    throw e;
  }
  const damage: Damage[] = [];
  // A crash between creating the file and writing its first bytes leaves it empty, or its start cut short.
  if (bytes.length < MAGIC.length && MAGIC.subarray(0, bytes.length).equals(bytes)) {
    if (bytes.length && !cutAllowed)
      damage.push({ why: 'it is cut short in its first bytes, and a later journal follows it', dropped: plural(bytes.length, 'byte') });
    return { whole: 0, cut: bytes.length > 0 && cutAllowed, frames: 0, damage };
  }
  let at = MAGIC.length;
  if (!bytes.subarray(0, MAGIC.length).equals(MAGIC)) {
    // Its first bytes are not a journal's: frames after them that check are still read.
    const next = frameAt(bytes, at).ok ? at : nextFrame(bytes, 0);
    const why = 'it does not start as a quota journal';
    if (next === null)
      return { whole: 0, cut: false, frames: 0, damage: [{ why: `${why}, and no frame in it checks`, dropped: 'all of it' }] };
    damage.push({ why, dropped: `its first ${plural(next, 'byte')}` });
    at = next;
  }
  const names = new Map<number, string>();
  let frame = 0;
  let frames = 0;
  while (at < bytes.length) {
    frame++;
    const f = frameAt(bytes, at);
    if (f.ok) {
      let unnamed = 0;
      for (const r of f.records) {
        if (r.type === Record.Define) names.set(r.id, r.credential);
        else if (!names.has(r.id)) unnamed++;
      }
      // A record whose credential no frame read defines cannot be counted: named, and the others in the frame kept.
      if (unnamed)
        damage.push({
          why: `frame ${frame}: ${plural(unnamed, 'record')} name${unnamed === 1 ? 's' : ''} a credential no frame read defines`,
          dropped: `${plural(unnamed, 'record')} of frame ${frame}`,
        });
      for (const r of f.records) if (r.type !== Record.Define && names.has(r.id)) applyRecord(r, names.get(r.id)!, state);
      frames++;
      at = f.end;
      continue;
    }
    const span = (end: number) => `${plural(end - at, 'byte')} from byte ${at}`;
    if (f.end !== undefined) {
      // It checks, but its records do not parse: its bounds are sound, and it alone is lost.
      damage.push({ why: `frame ${frame}: ${f.why}`, dropped: `frame ${frame} (${span(f.end)})` });
      names.clear();
      at = f.end;
      continue;
    }
    const next = nextFrame(bytes, at);
    if (next === null) {
      if (cutAllowed) return { whole: at, cut: true, frames, damage };
      damage.push({
        why: `frame ${frame} ${f.why}, and a later journal follows it`,
        dropped: `frame ${frame} to its end (${span(bytes.length)})`,
      });
      return { whole: at, cut: false, frames, damage };
    }
    const own = next === at + FRAME_HEAD + bytes.readUInt32LE(at);
    damage.push({
      why: `frame ${frame} ${f.why}`,
      dropped: own ? `frame ${frame} (${span(next)})` : `frame ${frame} to the next frame that checks (${span(next)})`,
    });
    // What the dropped bytes defined is unknown, and they may have given a number another credential's name: a
    // record after them counts only under a name a frame after them gives (a journal of this version names every
    // credential in each frame; one written before did so once per journal, and its later records are dropped).
    names.clear();
    at = next;
  }
  return { whole: at, cut: false, frames, damage };
}

function applyRecord(r: Exclude<JournalRecord, { type: typeof Record.Define }>, credential: string, state: Map<string, Counts>): void {
  const start = r.type === Record.Minute ? monthOf(r.now).start : r.start!;
  let c = state.get(credential);
  if (!c) state.set(credential, (c = { minute: [], monthStart: start, month: 0, past: [] }));
  if (r.type === Record.Refund) recordCharge(c, { now: 0, month: { start, end: start }, kind: 'refund' });
  else recordCharge(c, { now: r.now, month: { start, end: start }, kind: r.type === Record.Request ? 'request' : 'minute' });
}

/**
 * Where a credential's counts carry its number in the frame being written: the store hands each record the counts it
 * has just looked up, so that naming a credential once a frame (decision 86) costs no second lookup by its name. The
 * value is the running count of numbers given (`JournalRecords.next`) when this one was: it is the frame's when it
 * is at least that count at the frame's start (`first`), and the difference is the number. A symbol, so that the
 * snapshot's JSON and every other reader of the counts never see it.
 */
const NUMBERED = Symbol('number in the journal frame');
type Numbered = Counts & { [NUMBERED]?: number };

/**
 * What the store counted since its last flush, as journal records: written into memory as each request is counted,
 * and taken out whole by the flush. Each frame names the credentials it counts (DEFINE), then gives them by number.
 */
export class JournalRecords {
  private buf = Buffer.allocUnsafe(64 * 1024);
  private used = FRAME_HEAD;
  /** Numbers given so far, across frames; the frame being written numbers its credentials from `first` on. */
  private next = 0;
  private first = 0;

  private room(n: number): void {
    if (this.used + n <= this.buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.used + n));
    this.buf.copy(bigger, 0, 0, this.used);
    this.buf = bigger;
  }

  /** The credential's number in this frame; the first time in the frame, a DEFINE record names it. */
  private id(credential: string, counts: Numbered): number {
    const numbered = counts[NUMBERED];
    if (numbered !== undefined && numbered >= this.first) return numbered - this.first;
    const id = this.next - this.first;
    counts[NUMBERED] = this.next++;
    const length = Buffer.byteLength(credential);
    this.room(7 + length);
    this.buf[this.used] = Record.Define;
    this.buf.writeUInt32LE(id, this.used + 1);
    this.buf.writeUInt16LE(length, this.used + 5);
    this.buf.write(credential, this.used + 7);
    this.used += 7 + length;
    return id;
  }

  /**
   * An admitted request: counted in the minute, and in the month starting at `monthStart` unless `minuteOnly`.
   * `counts` are the credential's, as the store holds them.
   */
  admitted(credential: string, counts: Counts, now: number, monthStart: number, minuteOnly: boolean): void {
    const id = this.id(credential, counts);
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

  refunded(credential: string, counts: Counts, monthStart: number): void {
    const id = this.id(credential, counts);
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

  /**
   * The frame was written: what waited is on disk. The next frame names its credentials again (decision 86), so that
   * each frame reads without the ones before it, and damage to one loses that frame alone.
   */
  written(): void {
    this.used = FRAME_HEAD;
    this.first = this.next;
  }

  /** A new journal: what waits is dropped (the next snapshot holds it), and credentials are named again. */
  startJournal(): void {
    this.written();
  }
}

/**
 * The counts in `file` and its journals, or null when there is no file yet. Read-only: `usage` reads a file that a
 * running `serve` writes, and never takes its lock. Damage throws QuotaFileDamaged, whose advice is what the files
 * on disk allow, unless `salvage`: then what is still readable is kept (the snapshot, else the copy before it; then
 * every journal frame that checks), what was dropped is named in `notes`, and the damaged files are listed.
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
  /** What could not be read, in order: the first is the refusal's reason. */
  const problems: { where: string; reason: string }[] = [];
  /** What a salvage drops, each naming its file (the refusal's advice and the salvage's log say it). */
  const drops: string[] = [];
  let snapshot: ReturnType<typeof readSnapshot> | null;
  let copy: string | null = null;
  try {
    snapshot = readSnapshot(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
      if (!generations.length) return null;
      problems.push({ where: file, reason: `it is missing, but its journal ${journalFile(file, generations.at(-1)!)} is there` });
    } else {
      problems.push({ where: file, reason: (e as Error).message });
      damaged.push(file);
    }
    try {
      snapshot = readSnapshot(backupFile(file));
      copy = 'read';
    } catch (b) {
      snapshot = null;
      copy = (b as NodeJS.ErrnoException).code === 'ENOENT' ? 'is not there' : `cannot be read either (${(b as Error).message})`;
    }
  }
  const state = snapshot?.credentials ?? new Map<string, Counts>();
  const top = generations.at(-1) ?? 0;
  // A snapshot of the first format had no journals: any beside it are older than it, and are not replayed.
  const from = snapshot ? (snapshot.legacy ? top + 1 : snapshot.generation) : (generations[0] ?? 1);
  const journals = generations.filter((g) => g >= from);
  // They follow the snapshot one by one (its own may be absent only when none follows: a crash before it was made).
  const missing: number[] = [];
  for (let g = from; g < (journals.at(-1) ?? from); g++) if (!journals.includes(g)) missing.push(g);
  if (missing.length) {
    problems.push({
      where: journalFile(file, from),
      reason: `the journals beside it are ${journals.join(', ')}, not ${from} and the ones after it`,
    });
    drops.push(`${journalsNamed(file, missing)} (missing), with what ${missing.length === 1 ? 'it' : 'they'} counted`);
  }
  let journalBytes = 0;
  let journalTotal = 0;
  let frames = 0;
  for (const [i, g] of journals.entries()) {
    const path = journalFile(file, g);
    const last = i === journals.length - 1;
    const read = replay(path, state, last);
    frames += read.frames;
    if (read.damage.length) {
      problems.push({ where: path, reason: read.damage[0]!.why });
      drops.push(...read.damage.map((d) => `${d.dropped} of ${path}`));
      damaged.push(path);
    }
    if (read.cut) notes.push(`${path}: its last frame was cut short (a crash while saving); the ones before it are kept`);
    journalTotal += read.whole;
    if (last) journalBytes = read.whole;
  }
  if (problems.length && !salvage) {
    const first = problems[0]!;
    throw new QuotaFileDamaged(file, first.where, first.reason, recovery(file, { copy, journals, drops, frames }));
  }
  if (copy !== null)
    notes.unshift(
      `${problems[0]!.where}: ${problems[0]!.reason}; ` +
        (copy === 'read'
          ? `starting from ${backupFile(file)}`
          : `${backupFile(file)} ${copy}: counting from the journals alone, without what the snapshot held before them`),
    );
  notes.push(...drops.map((d) => `dropped ${d}`));
  // Counts to be written as a new snapshot (of the first format, or salvaged) continue in a journal of their own.
  const fresh = snapshot?.legacy || problems.length > 0 || (salvage && !snapshot);
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
