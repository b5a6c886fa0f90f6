/**
 * Content codings (decision 23), shared by the build, which writes a compressed variant beside each file it
 * serves as is, and the shim, which picks one per request. Runtime-neutral.
 */
import { isLedger, TREE } from './tree.js';

export const ENCODINGS = ['br', 'gzip'] as const;
export type Encoding = (typeof ENCODINGS)[number];

/** A variant's file name is its file's plus this suffix (the names nginx and most CDNs look for). */
export const ENCODING_SUFFIX: Record<Encoding, string> = { br: '.br', gzip: '.gz' };

/** Bodies up to this size are sent as they are: compression would save less than its headers cost. */
export const COMPRESS_MIN_BYTES = 1024;

/** Files the shim never sends whole (the ledger, the shim's own catalogue, the manifest) get no variants. */
export const hasVariants = (path: string, size: number): boolean =>
  size > COMPRESS_MIN_BYTES && path !== TREE.catalog && path !== TREE.manifest && !isLedger(path);

/**
 * The coding to send, from the request's Accept-Encoding and the codings at hand (RFC 9110 12.5.3): the highest
 * q-value wins, br on a tie; `identity` or absence of the header means none. q=0 refuses a coding, `*` stands for
 * any coding not named.
 */
export function negotiate(acceptEncoding: string | null, available: readonly Encoding[]): Encoding | null {
  if (!acceptEncoding || available.length === 0) return null;
  const q = new Map<string, number>();
  for (const part of acceptEncoding.split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    if (!name) continue;
    let weight = 1;
    for (const p of params) {
      const m = /^\s*q\s*=\s*([01](?:\.\d{0,3})?)\s*$/.exec(p);
      if (m) weight = Number(m[1]);
    }
    q.set(name === 'x-gzip' ? 'gzip' : name, weight);
  }
  let best: Encoding | null = null;
  let bestQ = 0;
  for (const e of available) {
    const w = q.get(e) ?? q.get('*') ?? 0;
    if (w > bestQ) [best, bestQ] = [e, w];
  }
  return best;
}
