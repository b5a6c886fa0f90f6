/**
 * Parses every discovered page, skipping pages whose bytes are unchanged since the previous build (the cache
 * holds each page's size, mtime and reading, and its SHA-256 once a build has hashed it). With more than two cores
 * pages are parsed on worker threads.
 */
import { statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { forEachLimited } from '../limited.js';
import { parsePage, type ParseJob, type ParseOutcome } from './parse-page.js';
import type { PageRef } from './discover.js';
import type { PageResult } from './readings.js';
import type { GuardProblem } from './guards.js';

/**
 * Bump when a parser's output or the page hash changes, so cached readings from older code are not reused (7: readings
 * held to their scales; 8: to their bounds, read at a finite point of the only trace of their name, decision 101).
 */
export const PARSER_VERSION = 8;

/**
 * The cache keeps readings without their weekly archive: the archive is only read when an asset's ledger
 * starts, and keeping it would make the cache many times larger. A page whose archive is wanted is parsed whole.
 */
const withoutArchive = ({ archive: _archive, ...rest }: PageResult): PageResult => rest;

export interface CacheEntry {
  size: number;
  mtimeMs: number;
  /** The SHA-256 of the page's bytes, when the build that read them hashed them (see parsePage). */
  hash?: string;
  result: PageResult;
}
export interface ParseCache {
  parser_version: number;
  pages: Record<string, CacheEntry>;
  /** What the build that wrote this cache read (its inputs' fingerprint) and wrote (its tree's manifest hash). */
  last_build?: { inputs: string; tree: string };
}

/** What a read of the site gives. */
export interface SiteRead {
  /** The readings of the pages read and not refused, in the order the pages were given. */
  results: PageResult[];
  /** The pages that could not be read or whose reading was refused, by file. */
  errors: Map<string, GuardProblem>;
  cache: ParseCache;
  /** Pages read by parsing them, and pages whose cached reading stood: neither counts a page in `errors`. */
  parsed: number;
  reused: number;
}

const workerFile = new URL('./parse-worker.js', import.meta.url);
/** Workers need compiled JavaScript; from TypeScript sources (the test runner) pages are parsed in-process. */
const canUseWorkers = import.meta.url.endsWith('.js');

function pool(size: number) {
  const workers = Array.from({ length: size }, () => new Worker(fileURLToPath(workerFile)));
  const waiting = new Map<number, (o: ParseOutcome) => void>();
  let next = 0;
  let id = 0;
  for (const w of workers)
    w.on('message', (m: { id: number; outcome: ParseOutcome }) => {
      waiting.get(m.id)!(m.outcome);
      waiting.delete(m.id);
    });
  return {
    run: (job: ParseJob) =>
      new Promise<ParseOutcome>((resolve) => {
        const n = id++;
        waiting.set(n, resolve);
        workers[next++ % workers.length]!.postMessage({ ...job, id: n });
      }),
    close: () => Promise.all(workers.map((w) => w.terminate())),
  };
}

/**
 * Parser threads by default: one per core but one, left to the main thread that receives the readings. On two
 * cores that means parsing in-process, which the benchmarks found the quicker there.
 */
const defaultJobs = (): number => Math.max(1, availableParallelism() - 1);

/** The cache's entry still stands for the page: same size, same mtime, same kind (its bytes are then taken as the same). */
export const untouched = (hit: CacheEntry | undefined, st: { size: number; mtimeMs: number }, ref: PageRef): hit is CacheEntry =>
  !!hit && hit.size === st.size && hit.mtimeMs === st.mtimeMs && hit.result.kind === ref.kind;

/** A page's reading as the build uses it: the cache keeps readings without their page's symbol. */
export const reading = (result: PageResult, ref: PageRef): PageResult => ({ ...result, symbol: ref.symbol });

export interface ReadOptions {
  /** Which pages must also yield their weekly archive (those of an asset whose ledger starts with this build). */
  wantsArchive: (ref: PageRef) => boolean;
  /** Parser threads (defaultJobs). */
  jobs?: number;
  /** A reading the build refuses (a guard of decision 27's): the page counts as unreadable. */
  refuse?: (result: PageResult, ref: PageRef) => GuardProblem | null;
  /** Called as each page that is read is done, with how many of them there are. */
  progress?: (done: number, total: number) => void;
}

/**
 * Reads every page. A page whose archive is wanted is parsed whole, never taken from the cache, and no page is
 * parsed twice.
 */
export async function readSite(
  dir: string,
  pages: PageRef[],
  previous: ParseCache | undefined,
  { wantsArchive, jobs = defaultJobs(), refuse = () => null, progress }: ReadOptions,
): Promise<SiteRead> {
  const old = previous?.parser_version === PARSER_VERSION ? previous.pages : {};
  const cache: ParseCache = { parser_version: PARSER_VERSION, pages: {} };
  const errors = new Map<string, GuardProblem>();
  const readings = new Map<string, PageResult>();
  let parsed = 0;
  let reused = 0;
  /**
   * Records a page's reading, counted as parsed or reused, or its refusal, counted among the errors alone: each page is
   * counted once, so parsed, reused and unreadable add up to the pages read.
   */
  const settle = (ref: PageRef, result: PageResult, how: 'parsed' | 'reused') => {
    const read = reading(result, ref);
    const problem = refuse(read, ref);
    if (problem) return void errors.set(ref.file, problem);
    readings.set(ref.file, read);
    if (how === 'parsed') parsed++;
    else reused++;
  };
  const todo: { ref: PageRef; size: number; mtimeMs: number }[] = [];
  for (const ref of pages) {
    const st = statSync(join(dir, ref.file));
    const hit = old[ref.file];
    if (untouched(hit, st, ref) && !wantsArchive(ref)) {
      cache.pages[ref.file] = hit;
      settle(ref, hit.result, 'reused');
    } else todo.push({ ref, size: st.size, mtimeMs: st.mtimeMs });
  }
  const workers = canUseWorkers && jobs > 1 && todo.length > 8 ? pool(Math.min(jobs, 8)) : null;
  let done = 0;
  const run = workers ? workers.run : parsePage;
  try {
    // A few pages in flight at a time: enough to keep every worker busy (in-process, so a page being hashed on the
    // thread pool does not hold up the next), never the whole site in memory.
    await forEachLimited(todo, workers ? Math.min(jobs, 8) * 2 : 2, async ({ ref, size, mtimeMs }) => {
      const hit = old[ref.file];
      const archive = wantsArchive(ref);
      const outcome = await run({
        dir,
        file: ref.file,
        kind: ref.kind,
        archive,
        cached: hit?.result.kind === ref.kind && !archive ? { size: hit.size, hash: hit.hash } : undefined,
      });
      progress?.(++done, todo.length);
      if ('error' in outcome) {
        errors.set(ref.file, outcome.error);
        return;
      }
      const result = 'unchanged' in outcome ? hit!.result : outcome.result;
      cache.pages[ref.file] = { size, mtimeMs, ...(outcome.hash && { hash: outcome.hash }), result: withoutArchive(result) };
      settle(ref, result, 'unchanged' in outcome ? 'reused' : 'parsed');
    });
  } finally {
    await workers?.close();
  }
  const results = pages.flatMap((ref) => readings.get(ref.file) ?? []);
  return { results, errors, cache, parsed, reused };
}
