/**
 * A deployed tree read over HTTP(S), so a pipeline with a clean workspace continues the ledger the CDN serves:
 * the manifest first, then every ledger it lists (a few at a time), each checked against the manifest by
 * `openTree`. A bearer token, if the origin wants one, comes from RISK_READINGS_PREVIOUS_TOKEN.
 *
 * The origin is not trusted to behave: every body is read against a limit (a file's size in the manifest, a cap
 * for the manifest itself) counted after decompression, an origin that stops sending is given up after a pause,
 * and each file after a deadline. Each failure is the environment's (exit 3), naming the URL and the cause.
 */
import { isLedger, TREE } from '../contract/tree.js';
import { EnvironmentError } from '../exit.js';
import { openTree, type PreviousTree, type ReadBytes } from './previous-tree.js';

const CONCURRENCY = 8;

export interface FetchLimits {
  /** The most bytes a manifest may have; other files may have exactly the size their manifest entry says. */
  manifestBytes: number;
  /** How long the origin may send nothing, from the request on. */
  idleMs: number;
  /** How long one file may take, from the request to its last byte. */
  fileMs: number;
}

/** A tree of 161 assets has a manifest of a few hundred KB; a pause or a file past these is an origin in trouble. */
const LIMITS: FetchLimits = { manifestBytes: 64 << 20, idleMs: 15_000, fileMs: 45_000 };

/** `https://host/path` (the folder holding v1/) or `https://host/path/v1` → the base every tree path is under. */
function treeBase(url: string): string {
  const u = new URL(url);
  u.search = '';
  u.hash = '';
  const path = u.pathname.replace(/\/+$/, '');
  u.pathname = /\/v1$/.test(path) ? `${path}/` : `${path}/v1/`;
  return u.toString();
}

const causeOf = (e: unknown) => {
  const cause = (e as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (e as Error).message;
};

/** Resolves as `work` does, or rejects with `onIdle()` if it takes longer than `ms`. */
async function within<T>(work: Promise<T>, ms: number, onIdle: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const idle = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(onIdle()), ms)));
  try {
    return await Promise.race([work, idle]);
  } finally {
    clearTimeout(timer);
  }
}

/** One file of the tree, at most `limit` bytes; undefined for a 404. */
async function fetchFile(target: string, headers: Record<string, string>, limit: number, l: FetchLimits): Promise<Uint8Array | undefined> {
  const abort = new AbortController();
  const deadline = setTimeout(
    () => abort.abort(new EnvironmentError(target, `the origin took more than ${l.fileMs / 1000} s for one file`)),
    l.fileMs,
  );
  const fail = (cause: string) => new EnvironmentError(target, cause);
  const silent = () => fail(`the origin sent nothing for ${l.idleMs / 1000} s`);
  /** A failure as the environment's: the idle limit's or the deadline's own, else `what` with the network's cause. */
  const explained = (e: unknown, what: string) =>
    e instanceof EnvironmentError
      ? e
      : abort.signal.reason instanceof EnvironmentError
        ? abort.signal.reason
        : fail(`${what} (${causeOf(e)})`);
  try {
    let res: Response;
    try {
      res = await within(fetch(target, { headers, signal: abort.signal, redirect: 'follow' }), l.idleMs, silent);
    } catch (e) {
      throw explained(e, 'cannot fetch the previous tree');
    }
    if (res.status === 404) return undefined;
    if (res.status === 401 || res.status === 403)
      throw fail(`the origin refused the request (${res.status}); set RISK_READINGS_PREVIOUS_TOKEN if it needs a bearer token`);
    if (!res.ok) throw fail(`the origin answered ${res.status} ${res.statusText}`);
    const declared = Number(res.headers.get('content-length') ?? NaN);
    if (!res.headers.get('content-encoding') && declared > limit)
      throw fail(`the origin announced ${declared} bytes where the tree has ${limit} at most`);
    const reader = res.body!.getReader();
    const chunks: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await within(reader.read(), l.idleMs, silent);
      } catch (e) {
        throw explained(e, 'the body broke off');
      }
      if (chunk.done) break;
      size += chunk.value.byteLength;
      if (size > limit) throw fail(`the body runs past ${limit} bytes, more than the tree has`);
      chunks.push(chunk.value);
    }
    return Buffer.concat(chunks, size);
  } finally {
    clearTimeout(deadline);
    // Whatever the origin still sends is not read.
    abort.abort();
  }
}

export async function fetchTree(url: string, token?: string, limits: FetchLimits = LIMITS): Promise<PreviousTree | null> {
  const base = treeBase(url);
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  const fetchOne = (path: string, limit: number) => fetchFile(new URL(path, base).toString(), headers, limit, limits);
  // Each file may be as long as its manifest entry says, the manifest itself up to its cap.
  const read: ReadBytes = (path, size) => fetchOne(path, size ?? limits.manifestBytes);
  const manifest = await read(TREE.manifest, undefined);
  if (!manifest) return null;
  // Every ledger is needed by the build: fetch them up front, a few at a time, and serve them from memory.
  const fetched = new Map<string, Uint8Array | undefined>([[TREE.manifest, manifest]]);
  const tree = await openTree(base, async (path, size) => (fetched.has(path) ? fetched.get(path) : read(path, size)), null);
  const ledgers = Object.keys(tree.manifest.files).filter(isLedger);
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < ledgers.length) {
        const p = ledgers[next++]!;
        fetched.set(p, await read(p, tree.manifest.files[p]!.size));
      }
    }),
  );
  return tree;
}
