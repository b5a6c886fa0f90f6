/**
 * A deployed tree read over HTTP(S), so a pipeline with a clean workspace continues the ledger the CDN serves:
 * the manifest first, then every ledger it lists (a few at a time), each checked against the manifest by
 * `openTree`. A bearer token, if the origin wants one, comes from RISK_READINGS_PREVIOUS_TOKEN.
 */
import { isLedger, TREE } from '../contract/tree.js';
import { EnvironmentError } from '../exit.js';
import { openTree, type PreviousTree, type ReadBytes } from './previous-tree.js';

const CONCURRENCY = 8;
const TIMEOUT_MS = 30_000;

/** `https://host/path` (the folder holding v1/) or `https://host/path/v1` → the base every tree path is under. */
export function treeBase(url: string): string {
  const u = new URL(url);
  u.search = '';
  u.hash = '';
  const path = u.pathname.replace(/\/+$/, '');
  u.pathname = /\/v1$/.test(path) ? `${path}/` : `${path}/v1/`;
  return u.toString();
}

export async function fetchTree(url: string, token?: string): Promise<PreviousTree | null> {
  const base = treeBase(url);
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  const read: ReadBytes = async (path) => {
    const target = new URL(path, base).toString();
    let res: Response;
    try {
      res = await fetch(target, { headers, signal: AbortSignal.timeout(TIMEOUT_MS), redirect: 'follow' });
    } catch (e) {
      const cause = (e as { cause?: { code?: string; message?: string } }).cause;
      throw new EnvironmentError(target, `cannot fetch the previous tree (${cause?.code ?? cause?.message ?? (e as Error).message})`);
    }
    if (res.status === 404) return undefined;
    if (res.status === 401 || res.status === 403)
      throw new EnvironmentError(
        target,
        `the origin refused the request (${res.status}); set RISK_READINGS_PREVIOUS_TOKEN if it needs a bearer token`,
      );
    if (!res.ok) throw new EnvironmentError(target, `the origin answered ${res.status} ${res.statusText}`);
    return new Uint8Array(await res.arrayBuffer());
  };
  const manifest = await read(TREE.manifest);
  if (!manifest) return null;
  // Every ledger is needed by the build: fetch them up front, a few at a time, and serve them from memory.
  const fetched = new Map<string, Uint8Array | undefined>([[TREE.manifest, manifest]]);
  const tree = await openTree(base, async (path) => (fetched.has(path) ? fetched.get(path) : read(path)), null);
  const ledgers = Object.keys(tree.manifest.files).filter(isLedger);
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < ledgers.length) {
        const p = ledgers[next++]!;
        fetched.set(p, await read(p));
      }
    }),
  );
  return tree;
}
