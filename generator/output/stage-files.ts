/**
 * The staging thread: writes a tree's files into its staging folder and makes their compressed variants, with
 * synchronous calls on a thread of its own, while the main thread goes on reading pages. Measured on this
 * project's 2-vCPU machines, one thread writing synchronously costs about half the system time of the same
 * writes through libuv's pool, and the pool's four threads doing this work took CPU from the main thread, which
 * is the build's critical path.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { ENCODINGS, type Encoding } from '../contract/encodings.js';
import { variants } from './compress.js';
import type { Digest } from './manifest.js';

export interface StageJob {
  id: number;
  /** The file's path inside the tree. */
  path: string;
  bytes: Uint8Array;
  /** Write the file itself (not when the previous tree lends it). */
  file: boolean;
  /** Make and write its compressed variants. */
  variants: boolean;
}

/** A failed write, as data: enough for asEnvironmentError to name the file and the cause. */
export interface StageFailure {
  message: string;
  code?: string;
  syscall?: string;
  path: string;
}

export type StageOutcome = { id: number; encodings?: Record<Encoding, Digest> } | { id: number; failure: StageFailure };

/** The work itself, for one staging folder: each folder made once, then each file (and variants) written. */
export function stager(dir: string): (job: StageJob) => StageOutcome {
  const made = new Set<string>();
  const write = (path: string, bytes: Uint8Array) => {
    const file = join(dir, path);
    const folder = dirname(file);
    try {
      if (!made.has(folder)) mkdirSync(folder, { recursive: true });
      made.add(folder);
      writeFileSync(file, bytes);
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      throw { message: err.message, code: err.code, syscall: err.syscall, path: err.path ?? file } satisfies StageFailure;
    }
  };
  return ({ id, path, bytes, file, variants: withVariants }) => {
    try {
      if (file) write(path, bytes);
      if (!withVariants) return { id };
      const v = variants(path, bytes);
      for (const e of ENCODINGS) write(v[e].path, v[e].bytes);
      return { id, encodings: Object.fromEntries(ENCODINGS.map((e) => [e, v[e].digest])) as Record<Encoding, Digest> };
    } catch (failure) {
      if (failure instanceof Error) return { id, failure: { message: failure.message, path: join(dir, path) } };
      return { id, failure: failure as StageFailure };
    }
  };
}

const workerFile = fileURLToPath(new URL('./stage-worker.js', import.meta.url));
/** Workers need compiled JavaScript; from TypeScript sources (the test runner) files are staged in-process. */
const canUseWorker = import.meta.url.endsWith('.js');

/** The failure as the error fs would have thrown, so the build reports it as the environment's. */
function asError(f: StageFailure): Error {
  return Object.assign(new Error(f.message), { code: f.code, syscall: f.syscall, path: f.path });
}

/**
 * The staging thread of one staging folder. `stage` hands the bytes over: they may be moved to the thread, so
 * the caller must not use them afterwards. A failure rejects that file's promise.
 */
export class StageThread {
  private readonly waiting = new Map<number, { resolve: (e?: Record<Encoding, Digest>) => void; reject: (e: Error) => void }>();
  private next = 0;
  /** Started with the first file: a build that stages nothing (an idle rebuild) starts no thread. */
  private worker: Worker | null = null;
  private readonly local: ((job: StageJob) => StageOutcome) | null;

  constructor(private readonly dir: string) {
    this.local = canUseWorker ? null : stager(dir);
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(workerFile, { workerData: { dir: this.dir } });
    worker.on('message', (o: StageOutcome) => this.settle(o));
    worker.on('error', (e) => {
      for (const w of this.waiting.values()) w.reject(e);
      this.waiting.clear();
      worker.unref();
    });
    return (this.worker = worker);
  }

  stage(
    path: string,
    bytes: Uint8Array,
    { file, variants }: Pick<StageJob, 'file' | 'variants'>,
  ): Promise<Record<Encoding, Digest> | undefined> {
    const id = this.next++;
    const done = new Promise<Record<Encoding, Digest> | undefined>((resolve, reject) => this.waiting.set(id, { resolve, reject }));
    const job: StageJob = { id, path, bytes, file, variants };
    if (this.local) {
      this.settle(this.local(job));
      return done;
    }
    const worker = this.thread();
    // The thread keeps the process alive only while it has files to stage: one a failed build left open never
    // holds the process.
    if (this.waiting.size === 1) worker.ref();
    // A buffer of its own is moved, not copied; a small one shares Node's pool and is copied.
    const own = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && !(bytes.buffer instanceof SharedArrayBuffer);
    worker.postMessage(job, own ? [bytes.buffer as ArrayBuffer] : []);
    return done;
  }

  private settle(o: StageOutcome): void {
    const w = this.waiting.get(o.id)!;
    this.waiting.delete(o.id);
    if (this.waiting.size === 0) this.worker?.unref();
    if ('failure' in o) w.reject(asError(o.failure));
    else w.resolve(o.encodings);
  }

  async close(): Promise<void> {
    await this.worker?.terminate();
  }
}
