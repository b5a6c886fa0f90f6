/**
 * Reads the quota files of the releases before the SQLite store, so that their counts are imported exactly on the
 * first start (decision 97) and `usage` can still bill from them until then. Read-only; nothing here writes them.
 *
 *   <file>              the snapshot, JSON: {"schema": 2, "journal": G, "credentials": {credential: counts}}, or
 *                       {"schema": 1, "credentials": {...}} (one document, no journals)
 *   <file>.journal.G    what was counted after it: MAGIC, then frames (u32 length, u32 CRC-32, records), each record
 *                       DEFINE (1, u32 id, u16 bytes, credential), REQUEST (2, u32 id, f64 time, f64 month start),
 *                       MINUTE (3, u32 id, f64 time) or REFUND (4, u32 id, f64 month start), little-endian
 *   <file>.bak          the snapshot before it, with its own journals (not read: the snapshot supersedes it)
 *
 * Only the last frame of the last journal may be cut short (a crash in the middle of an append); any other damage is
 * refused, naming the file and the frame, unless `salvage`: then reading stops at the damage and says what it dropped.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { crc32 } from 'node:zlib';
import { z } from 'zod';
import { monthOf, newCounts, recordCharge, type Counts } from '../quota.js';

const MAGIC = Buffer.from('rr-quota-journal 1\n');
const journalFile = (file: string, generation: number) => `${file}.journal.${generation}`;

const CountsShape = z.object({
  minute: z.array(z.number()),
  monthStart: z.number().int(),
  month: z.number().int().min(0),
  past: z.array(z.tuple([z.number().int(), z.number().int().min(0)])).optional(),
});
const Snapshot = z.union([
  z.object({ schema: z.literal(2), journal: z.number().int().min(1), credentials: z.record(z.string(), CountsShape) }),
  z.object({ schema: z.literal(1), credentials: z.record(z.string(), CountsShape) }),
]);

/** A quota file of an earlier release that cannot be read whole (serve and usage exit 3 with it). */
export class LegacyQuotaDamaged extends Error {}

/** Whether `file` is a quota file of an earlier release: a JSON document, or journals beside where it was. */
export function isLegacyQuotaFile(file: string): boolean {
  try {
    const head = readFileSync(file).subarray(0, 64).toString('utf8').trimStart();
    return head.startsWith('{');
  } catch {
    return false;
  }
}

/** Every file of the quota file `file` as it lies on disk: the snapshot, its copy, every journal, a first-format copy. */
export function legacyFiles(file: string): string[] {
  const base = basename(file);
  const names = existsSync(dirname(file)) ? readdirSync(dirname(file)) : [];
  const own = (n: string) => n === base || n === `${base}.bak` || n === `${base}.schema-1` || /^\.journal\.\d+$/.test(n.slice(base.length));
  return names.filter((n) => n.startsWith(base) && own(n)).map((n) => `${dirname(file)}/${n}`);
}

export interface LegacyCounts {
  counts: Map<string, Counts>;
  /** What a salvage dropped, or a last frame a crash cut short. */
  notes: string[];
}

/** The counts the quota file `file` holds: its snapshot, then its journals from the snapshot's generation on. */
export function readLegacyQuotaFile(file: string, { salvage = false } = {}): LegacyCounts {
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new LegacyQuotaDamaged(`${file}: not JSON (${(e as Error).message}); restore it from ${file}.bak or a backup of your own`);
  }
  const parsed = Snapshot.safeParse(doc);
  if (!parsed.success)
    throw new LegacyQuotaDamaged(
      `${file}: a JSON document, but not the quota file of an earlier release ({"schema": 2, "journal": N, "credentials": {...}}); --quotas takes the quota database serve counts in (by default <public>/.risk-readings-quotas.sqlite)`,
    );
  const counts = new Map<string, Counts>();
  for (const [k, c] of Object.entries(parsed.data.credentials))
    counts.set(k, { minute: c.minute, monthStart: c.monthStart, month: c.month, past: c.past ?? [] });
  const notes: string[] = [];
  if (parsed.data.schema === 1) return { counts, notes };
  const generations: number[] = [];
  for (let g = parsed.data.journal; existsSync(journalFile(file, g)); g++) generations.push(g);
  for (const g of generations) replay(journalFile(file, g), counts, g === generations.at(-1), salvage, notes);
  return { counts, notes };
}

/** Applies one journal's frames to `counts` with the quota rule's own `recordCharge`. */
function replay(path: string, counts: Map<string, Counts>, last: boolean, salvage: boolean, notes: string[]): void {
  const bytes = readFileSync(path);
  if (bytes.length <= MAGIC.length && MAGIC.subarray(0, bytes.length).equals(bytes)) return;
  const names = new Map<number, string>();
  const damaged = (frame: number, at: number, why: string) => {
    const where = `${path}, frame ${frame} (byte ${at})`;
    if (last && why.startsWith('is cut short')) return void notes.push(`${where}: the last frame, cut short by a crash, is left out`);
    if (!salvage)
      throw new LegacyQuotaDamaged(
        `${where} ${why}. Its counts cannot be read exactly: restore the files from a backup, or start with --discard-damaged-quotas, which imports what reads before the damage`,
      );
    notes.push(`${where} ${why}: ${bytes.length - at} bytes from there on are dropped`);
  };
  if (!bytes.subarray(0, MAGIC.length).equals(MAGIC)) return damaged(0, 0, 'does not start as a quota journal');
  let at = MAGIC.length;
  for (let frame = 1; at < bytes.length; frame++) {
    if (bytes.length - at < 8) return damaged(frame, at, 'is cut short');
    const length = bytes.readUInt32LE(at);
    const end = at + 8 + length;
    if (end > bytes.length) return damaged(frame, at, 'is cut short');
    const p = bytes.subarray(at + 8, end);
    if (length === 0 || crc32(p) !== bytes.readUInt32LE(at + 4)) return damaged(frame, at, 'fails its checksum');
    const bad = records(p, names, counts);
    if (bad !== null) return damaged(frame, at, bad);
    at = end;
  }
}

/** Applies one frame's records; null, or what in it cannot be read (its checksum matched, so a writer's fault). */
function records(p: Buffer, names: Map<number, string>, counts: Map<string, Counts>): string | null {
  try {
    for (let r = 0; r < p.length;) {
      const [type, id] = [p[r]!, p.readUInt32LE(r + 1)];
      if (type === 1) {
        const n = p.readUInt16LE(r + 5);
        names.set(id, p.toString('utf8', r + 7, r + 7 + n));
        r += 7 + n;
        continue;
      }
      const credential = names.get(id);
      if (credential === undefined || type < 2 || type > 4) return `holds a record it cannot read at byte ${r}`;
      const now = type === 4 ? 0 : p.readDoubleLE(r + 5);
      const start = type === 2 ? p.readDoubleLE(r + 13) : type === 4 ? p.readDoubleLE(r + 5) : monthOf(now).start;
      const month = { start, end: start };
      let c = counts.get(credential);
      if (!c) counts.set(credential, (c = newCounts(month)));
      recordCharge(c, { now, month, kind: type === 2 ? 'request' : type === 3 ? 'minute' : 'refund' });
      r += type === 2 ? 21 : 13;
    }
    return null;
  } catch {
    return 'holds a record that runs past its end';
  }
}
