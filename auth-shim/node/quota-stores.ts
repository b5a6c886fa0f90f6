/**
 * The Node server's quota stores (decision 21): counts that survive a restart (a file on local disk, the
 * default) or are shared by a fleet (Redis), and the in-process fallback that keeps answering when a shared
 * store cannot be reached. Each keeps every credential's monthly totals for the current month and the thirteen
 * before it (decision 38), which `risk-readings usage` reads (quota-totals.ts).
 */
import { existsSync, ftruncateSync, linkSync, writeSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { resolve } from 'node:path';
import { RedisQuotaStore } from './quota-redis.js';
import { LockHeld, lockFile, type Lock } from '../../generator/output/lock.js';
import {
  admit,
  copyCounts,
  FallbackQuotaStore,
  MemoryQuotaStore,
  refundMonth,
  type Admission,
  type Counts,
  type Limits,
  type MonthUse,
  type MonthWindow,
  type QuotaStore,
} from '../quota.js';
import {
  journalFile,
  JournalRecords,
  keepBackupSync,
  MAGIC,
  readQuotaFile,
  removeJournalsBefore,
  setAside,
  unlinkBackupFromSnapshotSync,
  writeSnapshot,
  writeSnapshotSync,
} from './quota-file.js';

export { QuotaFileDamaged } from './quota-file.js';

/** Another process counts in this quota file (exit 3 from `serve`): names it and says what to use instead. */
export class QuotaFileHeld extends Error {}

/** Journal bytes past which a compaction pays: at least this, and at least the snapshot's size. */
const COMPACT_MIN_BYTES = 16 * 1024 * 1024;
/** After a compaction that failed (a full disk), the wait before the next try. */
const COMPACT_RETRY_MS = 60_000;
/** Records kept in memory while the journal cannot be written; past this, the next snapshot holds them instead. */
const MAX_UNWRITTEN = 32 * 1024 * 1024;

/**
 * Counts held in memory, saved to `file` (quota-file.ts): each request counted adds a few bytes of record in memory,
 * and at most once a second what accumulated is appended to the journal in one write, so a save costs what was
 * counted since the last one, never every credential; a restart loses at most the last second. Now and then a
 * compaction writes the whole snapshot a slice at a time, between requests, and keeps the one before it as `.bak`.
 * `close()` saves at once and lets go of the file; the CLI calls it on SIGTERM and SIGINT.
 *
 * One process counts in a file at a time: `open` takes `<file>.lock` (naming its holder) and waits, up to
 * `waitMs`, for a process still holding it, as in a rolling restart where the old server drains and saves its
 * counts before the new one loads them. Two processes counting in one file would each overwrite the other's.
 *
 * A file that cannot be read is refused (QuotaFileDamaged), never taken for empty counts; `discardDamaged` starts
 * from what can still be read instead, and moves the damaged files aside.
 */
export class DiskQuotaStore extends MemoryQuotaStore {
  private readonly records = new JournalRecords();
  private readonly timer: ReturnType<typeof setInterval>;
  private compacting: Promise<void> | null = null;
  private compactAfter = 0;
  /** While a snapshot is written: each credential's counts as they stood when it was cut (null: not in it). */
  private frozen: Map<string, Counts | null> | null = null;
  private syncing = false;
  private closed = false;

  private constructor(
    readonly file: string,
    private journal: FileHandle,
    private generation: number,
    /** The generation the snapshot on disk continues at; the journals before the previous one's are removed. */
    private snapshotGeneration: number,
    private journalBytes: number,
    private journalTotal: number,
    private snapshotBytes: number,
    private readonly options: Required<Pick<DiskOptions, 'log' | 'compactBytes'>>,
    private readonly lock: Lock,
    flushMs: number,
  ) {
    super();
    this.timer = setInterval(() => this.flush(), flushMs);
    this.timer.unref();
  }

  static async open(file: string, options: DiskOptions = {}): Promise<DiskQuotaStore> {
    const { waitMs = 30_000 } = options;
    const held = 'another process counts in this quota file';
    const deadline = Date.now() + waitMs;
    for (;;) {
      let lock: Lock;
      try {
        lock = await lockFile(`${file}.lock`, `risk-readings serve (pid ${process.pid})`, held);
      } catch (e) {
        if (!(e instanceof LockHeld)) throw e;
        if (Date.now() >= deadline)
          throw new QuotaFileHeld(
            `${e.message}; waited ${waitMs / 1000} s. One process counts per quota file: share counts between processes with --quotas redis://HOST:PORT, or give each its own file`,
          );
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      try {
        return await DiskQuotaStore.load(file, options, lock);
      } catch (e) {
        await lock.release();
        throw e;
      }
    }
  }

  private static async load(file: string, options: DiskOptions, lock: Lock): Promise<DiskQuotaStore> {
    const { flushMs = 1_000, log = () => {}, discardDamaged = false, compactBytes = COMPACT_MIN_BYTES } = options;
    let state = readQuotaFile(file, { salvage: discardDamaged });
    if (state?.damaged.length) {
      const at = new Date();
      const moved = state.damaged.map((path) => `${path} -> ${setAside(path, at)}`);
      log(
        `quotas: ${state.notes.join('; ')}; --discard-damaged-quotas: counting on from what could be read; moved aside: ${moved.join(', ')}`,
      );
    } else for (const note of state?.notes ?? []) log(`quotas: ${note}`);
    state ??= {
      counts: new Map(),
      snapshotGeneration: 0,
      generation: 1,
      journalBytes: 0,
      journalTotal: 0,
      snapshotBytes: 0,
      legacy: false,
      notes: [],
      damaged: [],
    };
    let snapshotBytes = state.snapshotBytes;
    // No snapshot of this format yet (a first start, a file of the first format, a salvage): write one now, and keep
    // it as the last good copy from the start. A file of the first format stays beside it, as it was.
    if (state.snapshotGeneration === 0) {
      if (state.legacy && !existsSync(`${file}.schema-1`)) linkSync(file, `${file}.schema-1`);
      snapshotBytes = writeSnapshotSync(file, state.generation, state.counts);
      keepBackupSync(file);
    } else if (unlinkBackupFromSnapshotSync(file)) log(`quotas: ${file}.bak was another name for ${file}; it is now a copy of its own`);
    const journal = await openJournal(file, state.generation, state.journalBytes);
    const store = new DiskQuotaStore(
      file,
      journal,
      state.generation,
      state.snapshotGeneration || state.generation,
      Math.max(state.journalBytes, MAGIC.length),
      state.journalTotal,
      snapshotBytes,
      { log, compactBytes },
      lock,
      flushMs,
    );
    for (const [k, c] of state.counts) store.counts.set(k, c);
    return store;
  }

  /** Keeps a credential's counts as the snapshot being written cut them, before they change. */
  private freeze(credential: string): void {
    if (this.frozen!.has(credential)) return;
    const c = this.counts.get(credential);
    this.frozen!.set(credential, c ? copyCounts(c) : null);
  }

  override take(credential: string, limits: Limits, now: number, month: MonthWindow, use: MonthUse = 'request'): Admission {
    if (this.frozen) this.freeze(credential);
    const c = this.countsOf(credential, month);
    const a = admit(c, limits, now, month, use);
    if (a.ok) this.records.admitted(credential, c, now, month.start, !a.monthCharged);
    return a;
  }

  override refund(credential: string, month: MonthWindow): void {
    const c = this.counts.get(credential);
    if (!c) return;
    if (this.frozen) this.freeze(credential);
    refundMonth(c, month);
    this.records.refunded(credential, c, month.start);
  }

  /** Appends what was counted since the last flush to the journal, in one write: bytes in proportion to it. */
  flush(): void {
    const frame = this.records.frame();
    if (!frame || this.closed) return;
    try {
      for (let at = 0; at < frame.length;) at += writeSync(this.journal.fd, frame, at);
    } catch (e) {
      // A part written (a full disk) would leave half a frame: cut it off, and keep the records for the next flush.
      try {
        ftruncateSync(this.journal.fd, this.journalBytes);
      } catch {
        // the frame's checksum tells the load it is cut short; the next flush writes after it
      }
      this.options.log(`quotas: cannot save ${journalFile(this.file, this.generation)}: ${(e as Error).message}`);
      if (this.records.size > MAX_UNWRITTEN) {
        // Memory holds every count: the next snapshot saves them all, so the records need not wait any longer (the
        // credentials are named again in what follows).
        this.records.startJournal();
        this.compactAfter = 0;
        this.startCompaction();
      }
      return;
    }
    this.records.written();
    this.journalBytes += frame.length;
    this.journalTotal += frame.length;
    this.syncSoon();
    if (Date.now() >= this.compactAfter && this.journalTotal > Math.max(this.options.compactBytes, this.snapshotBytes))
      this.startCompaction();
  }

  private startCompaction(): void {
    if (!this.compacting && !this.closed) this.compacting = this.compact().finally(() => (this.compacting = null));
  }

  /** Puts the journal on the disk itself, off the main thread; one at a time (each covers every write before it). */
  private syncSoon(): void {
    if (this.syncing) return;
    this.syncing = true;
    this.journal
      .datasync()
      .catch((e: Error) => this.options.log(`quotas: cannot sync ${journalFile(this.file, this.generation)}: ${e.message}`))
      .finally(() => (this.syncing = false));
  }

  /**
   * A new snapshot, so that the journals stay short. The journal turns to the next generation at the instant the
   * snapshot is cut; the counts as they stood then are written a slice at a time (requests are answered between
   * slices, and a credential counted meanwhile keeps a copy of its counts as cut), synced and renamed into place, the
   * previous snapshot kept as `.bak` with its journal; older journals are removed.
   */
  private async compact(): Promise<void> {
    const next = this.generation + 1;
    let journal: FileHandle;
    try {
      journal = await openJournal(this.file, next, 0);
    } catch (e) {
      this.compactAfter = Date.now() + COMPACT_RETRY_MS;
      this.options.log(`quotas: cannot start ${journalFile(this.file, next)}: ${(e as Error).message}`);
      return;
    }
    if (this.closed) return void (await journal.close());
    // The cut: what was counted before it goes to this journal, what comes after to the next.
    this.flush();
    if (this.records.size) {
      await journal.close();
      this.compactAfter = Date.now() + COMPACT_RETRY_MS;
      return;
    }
    const old = this.journal;
    [this.journal, this.generation, this.journalBytes] = [journal, next, MAGIC.length];
    this.records.startJournal();
    this.syncing = false;
    this.frozen = new Map();
    const frozen = this.frozen;
    await old.close();
    try {
      this.snapshotBytes = await writeSnapshot(this.file, next, this.counts.keys(), (k) =>
        frozen.has(k) ? frozen.get(k)! : this.counts.get(k)!,
      );
    } catch (e) {
      // The journals from the snapshot on disk on are all kept: the counts stand as they were, only longer to read.
      this.compactAfter = Date.now() + COMPACT_RETRY_MS;
      this.options.log(`quotas: cannot write ${this.file}: ${(e as Error).message}; the journals keep every count meanwhile`);
      return;
    } finally {
      this.frozen = null;
    }
    // What the snapshot holds no longer counts toward the next compaction; what came after it is in the new journal.
    this.journalTotal = this.journalBytes;
    const previous = this.snapshotGeneration;
    this.snapshotGeneration = next;
    // The `.bak` snapshot continues at `previous`: its journals stay, and the ones before them go.
    removeJournalsBefore(this.file, previous);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    clearInterval(this.timer);
    await this.compacting;
    this.flush();
    this.closed = true;
    await this.journal.datasync().catch(() => {});
    await this.journal.close();
    await this.lock.release();
  }
}

/** The journal `generation` open for appending, cut to its `whole` bytes (a frame a crash cut short goes), begun with MAGIC. */
async function openJournal(file: string, generation: number, whole: number): Promise<FileHandle> {
  const fh = await open(journalFile(file, generation), 'a');
  try {
    const { size } = await fh.stat();
    if (size > whole) await fh.truncate(whole);
    if (whole === 0) {
      await fh.write(MAGIC);
      await fh.datasync();
    }
    return fh;
  } catch (e) {
    await fh.close();
    throw e;
  }
}

export interface DiskOptions {
  flushMs?: number;
  log?: (m: string) => void;
  /** How long to wait for another process to let go of the file (a rolling restart). */
  waitMs?: number;
  /** Start from what can still be read of a damaged file, moving the damaged files aside (`serve --discard-damaged-quotas`). */
  discardDamaged?: boolean;
  /** Journal bytes past which a compaction runs (at least the snapshot's size); tests make it small. */
  compactBytes?: number;
}

export interface OpenOptions {
  /** `serve --discard-damaged-quotas`: a damaged quota file is set aside and counting goes on from what it still holds. */
  discardDamaged?: boolean;
}

/** `serve --quotas`: `redis://...` (shared), `memory` (this process only), or a file (the default: beside the tree). */
export async function openQuotaStore(spec: string, log: (m: string) => void, waitMs?: number, o: OpenOptions = {}): Promise<QuotaStore> {
  if (/^rediss?:\/\//.test(spec)) return new FallbackQuotaStore(new RedisQuotaStore(spec), log);
  if (spec === 'memory') return new MemoryQuotaStore();
  return DiskQuotaStore.open(resolve(spec), { log, waitMs, discardDamaged: o.discardDamaged });
}
