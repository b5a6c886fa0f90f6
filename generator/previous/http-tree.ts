/**
 * A deployed tree read over HTTP(S), so a pipeline with a clean workspace continues the ledger the CDN serves:
 * the manifest first, then every file the build reads from it (the catalogue, the ledgers, the AssetRisk files),
 * a few at a time, held in memory until the build reads each, and each checked against the manifest by
 * `openTree`. A bearer token, if the origin wants one, comes from RISK_READINGS_PREVIOUS_TOKEN, and goes to that
 * origin only: a redirect is followed within it and refused to any other (fetchWithinOrigin).
 *
 * The origin is not trusted to behave, and no bound comes from it: the manifest has a cap, the files the build
 * reads may together declare no more than a fixed budget (checked before any is fetched, so a manifest that lies
 * about its sizes costs nothing), every body is read against its declared size counted after decompression, an
 * origin that stops sending is given up after a pause, each file after a deadline, and the whole read after one
 * deadline. Each failure is the environment's (exit 3), naming the URL and the cause.
 */
import { BodyTooLarge, MANIFEST_MAX_BYTES, readBounded } from '../contract/bounded-body.js';
import { asManifest } from '../contract/manifest-check.js';
import { fetchWithinOrigin, RedirectRefused } from '../contract/redirects.js';
import { isLedger, TREE } from '../contract/tree.js';
import { treeBase } from '../contract/tree-url.js';
import type { Manifest } from '../contract/shapes.js';
import { EnvironmentError } from '../exit.js';
import { openTree, type PreviousTree, type ReadBytes } from './open-tree.js';

const CONCURRENCY = 8;

export interface FetchLimits {
  /** The most bytes a manifest may have; other files may have exactly the size their manifest entry says. */
  manifestBytes: number;
  /** The most bytes the files the build reads may declare together: what the read holds in memory at most. */
  heldBytes: number;
  /** How long the origin may send nothing, from the request on. */
  idleMs: number;
  /** How long one file may take, from the request to its last byte. */
  fileMs: number;
  /** How long the whole read may take, from the manifest's request to the last file's last byte. */
  totalMs: number;
}

/**
 * A tree of 161 assets has a manifest of a few hundred KB and ledgers of tens of MB, growing by a row per asset a
 * day; a pause, a file or a read past these is an origin in trouble.
 */
const LIMITS: FetchLimits = { manifestBytes: MANIFEST_MAX_BYTES, heldBytes: 128 << 20, idleMs: 15_000, fileMs: 45_000, totalMs: 120_000 };

const RISK = /^assets\/[^/]+\/risk\.json$/;

/**
 * The files of a tree a build reads (read-inputs.ts): the catalogue, every ledger, every asset's AssetRisk (the
 * change feed's state and readings carried forward), and for a tree whose manifest lists no pages, the asset list
 * that names them.
 */
function readByBuild(files: Manifest['files'], listsPages: boolean): string[] {
  return Object.keys(files).filter(
    (p) => p === TREE.catalog || isLedger(p) || RISK.test(p) || (!listsPages && p === TREE.assetList('ultra')),
  );
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

/** One file of the tree, at most `limit` bytes; undefined for a 404. `whole` ends it with the whole read. */
async function fetchFile(
  target: string,
  headers: Record<string, string>,
  limit: number,
  l: FetchLimits,
  whole: AbortSignal,
): Promise<Uint8Array | undefined> {
  const abort = new AbortController();
  const deadline = setTimeout(
    () => abort.abort(new EnvironmentError(target, `the origin took more than ${l.fileMs / 1000} s for one file`)),
    l.fileMs,
  );
  const signal = AbortSignal.any([abort.signal, whole]);
  const fail = (cause: string) => new EnvironmentError(target, cause);
  const silent = () => fail(`the origin sent nothing for ${l.idleMs / 1000} s`);
  /** A failure as the environment's: a limit's own, a refused redirect's, else `what` with the network's cause. */
  const explained = (e: unknown, what: string) =>
    e instanceof EnvironmentError
      ? e
      : signal.reason instanceof EnvironmentError
        ? signal.reason
        : e instanceof RedirectRefused
          ? new EnvironmentError(e.url, e.problem)
          : fail(`${what} (${causeOf(e)})`);
  try {
    let res: Response;
    try {
      res = await within(
        fetchWithinOrigin((url, init) => fetch(url, init), target, { headers, signal }),
        l.idleMs,
        silent,
      );
    } catch (e) {
      throw explained(e, 'cannot fetch the previous tree');
    }
    if (res.status === 404) return undefined;
    if (res.status === 401 || res.status === 403)
      throw fail(`the origin refused the request (${res.status}); set RISK_READINGS_PREVIOUS_TOKEN if it needs a bearer token`);
    if (!res.ok) throw fail(`the origin answered ${res.status} ${res.statusText}`);
    try {
      return await readBounded(res, limit, (read) => within(read, l.idleMs, silent));
    } catch (e) {
      throw e instanceof BodyTooLarge ? fail(e.message) : explained(e, 'the body broke off');
    }
  } finally {
    clearTimeout(deadline);
    // Whatever the origin still sends is not read.
    abort.abort();
  }
}

export async function fetchTree(url: string, token?: string, limits: FetchLimits = LIMITS): Promise<PreviousTree | null> {
  const base = treeBase(url);
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  const whole = new AbortController();
  const deadline = setTimeout(
    () => whole.abort(new EnvironmentError(base, `reading the previous tree took more than ${limits.totalMs / 1000} s`)),
    limits.totalMs,
  );
  const fetchOne = (path: string, limit: number) => fetchFile(new URL(path, base).toString(), headers, limit, limits, whole.signal);
  try {
    const manifest = await fetchOne(TREE.manifest, limits.manifestBytes);
    if (!manifest) return null;
    // What the build reads, fetched now and held until it reads each (then let go); anything else when asked.
    const held = new Map<string, Uint8Array | undefined>([[TREE.manifest, manifest]]);
    const read: ReadBytes = async (path, size) => {
      if (!held.has(path)) return fetchOne(path, size ?? limits.manifestBytes);
      const bytes = held.get(path);
      held.delete(path);
      return bytes;
    };
    const checked = manifestOf(manifest);
    // A manifest this cannot read is openTree's to refuse, naming what is wrong with it.
    if (checked) {
      const files = checked.files;
      const wanted = readByBuild(files, Array.isArray(checked.pages));
      const declared = wanted.reduce((sum, p) => sum + files[p]!.size, 0);
      if (declared > limits.heldBytes)
        throw new EnvironmentError(
          new URL(TREE.manifest, base).toString(),
          `the manifest declares ${declared} bytes for the ${wanted.length} files a build reads, more than the ${limits.heldBytes} it holds in memory at most`,
        );
      let next = 0;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < wanted.length) {
            const p = wanted[next++]!;
            held.set(p, await fetchOne(p, files[p]!.size));
          }
        }),
      ).catch((e: unknown) => {
        // The first failure ends the others' reads too.
        whole.abort(e);
        throw e;
      });
    }
    return await openTree(base, read, null);
  } finally {
    clearTimeout(deadline);
  }
}

/** The manifest, checked by the shared rule; undefined when it is not one (openTree then says why). */
function manifestOf(bytes: Uint8Array): Manifest | undefined {
  try {
    return asManifest(JSON.parse(Buffer.from(bytes).toString('utf8')), (problem) => new Error(problem));
  } catch {
    return undefined;
  }
}
