/** Reads and parses one page; used in-process and by the worker pool. Errors come back as data, not throws. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { webcrypto } from 'node:crypto';
import { PageError } from './errors.js';
import { validatedArchive, type PageResult } from './readings.js';
import { KINDS, type PageKind } from './registry.js';

/** `archive`: mine the weekly history too (only for an asset whose ledger starts; see ParseOptions). */
export interface ParseJob {
  dir: string;
  file: string;
  kind: PageKind;
  /** The parse cache's entry for the page, when its reading could stand for these bytes (same kind, no archive). */
  cached?: { size: number; hash?: string };
  archive: boolean;
}
/** `hash` is there when the page was hashed: only a page the size of its cached entry is (see parsePage). */
export type ParseOutcome =
  | { file: string; hash?: string; result: PageResult }
  | { file: string; hash: string; unchanged: true }
  | { file: string; hash?: string; error: { field: string; found: string; message: string } };

/**
 * Reads whole pages synchronously: in a worker thread nothing else waits on this thread, and one blocking read
 * costs less than the open/stat/read/close round trips through the thread pool that an async read makes.
 */
export async function parsePage(job: ParseJob): Promise<ParseOutcome> {
  const bytes = readFileSync(join(job.dir, job.file));
  // Only bytes the size of the cached page can be its bytes; hashing every page cost a day-2 build more than it saved.
  const hash = job.cached?.size === bytes.byteLength ? await pageHash(bytes) : undefined;
  if (hash !== undefined && hash === job.cached?.hash) return { file: job.file, hash, unchanged: true };
  try {
    return { file: job.file, hash, result: parseAs(job.kind, bytes, job.file, job.archive) };
  } catch (e) {
    if (e instanceof PageError) return { file: job.file, hash, error: { field: e.field, found: e.found, message: e.message } };
    return {
      file: job.file,
      hash,
      error: { field: '(page)', found: String((e as Error).message), message: `${job.file}: ${(e as Error).message}` },
    };
  }
}

/**
 * A page's identity in the parse cache: the SHA-256 of its bytes, the manifest's hash. Web Crypto computes it on the
 * thread pool, so one page is hashed while the build parses another.
 */
async function pageHash(bytes: Uint8Array): Promise<string> {
  return Buffer.from(await webcrypto.subtle.digest('SHA-256', bytes)).toString('hex');
}

/**
 * One page read as its kind: the kind's parser, then its weekly archive checked as the ledger will publish it. The
 * reading names its page and kind; its symbol is the discovery's to give (null here).
 */
export function parseAs(kind: PageKind, bytes: Buffer, file: string, archive: boolean): PageResult {
  const parsed = KINDS[kind].parse(bytes, file, { archive });
  if (parsed.archive) validatedArchive(parsed.archive, file);
  return { file, kind, symbol: null, ...parsed };
}
