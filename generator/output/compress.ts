/**
 * The compressed variants of a tree's files (decision 23), made once at build time. zlib's asynchronous calls
 * run on libuv's thread pool, so the variants of many files are made on every core while the main thread
 * validates. Both codings are deterministic for the same bytes and settings, so trees stay byte-identical.
 */
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import { ENCODING_SUFFIX, type Encoding } from '../contract/encodings.js';
import { digest, type Digest } from './manifest.js';

const br = promisify(brotliCompress);
const gz = promisify(gzip);

/**
 * Brotli 5 and gzip 6: measured on a full fixture tree, brotli 9 saves 1% more for 10x the time and 11 a further
 * 20% for 100x; a build that runs three times a day is better spent elsewhere.
 */
const BROTLI_QUALITY = 5;
const GZIP_LEVEL = 6;

export function compress(bytes: Uint8Array, encoding: Encoding): Promise<Buffer> {
  return encoding === 'br'
    ? br(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.byteLength } })
    : gz(bytes, { level: GZIP_LEVEL });
}

export interface Variant {
  path: string;
  bytes: Buffer;
  digest: Digest;
}

/** Both variants of one file, named by ENCODING_SUFFIX. */
export async function variants(path: string, bytes: Uint8Array): Promise<Record<Encoding, Variant>> {
  const [b, g] = await Promise.all([compress(bytes, 'br'), compress(bytes, 'gzip')]);
  return {
    br: { path: path + ENCODING_SUFFIX.br, bytes: b, digest: digest(b) },
    gzip: { path: path + ENCODING_SUFFIX.gzip, bytes: g, digest: digest(g) },
  };
}
