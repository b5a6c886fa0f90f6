/**
 * The compressed variants of a tree's files (decision 23), made once at build time on the build's staging thread
 * (see stage-files.ts) while the main thread reads pages, and the shim's compression of a body cut on the fly.
 * Both codings are deterministic for the same bytes and settings, so trees stay byte-identical.
 */
import { promisify } from 'node:util';
import { brotliCompress, brotliCompressSync, constants, gzip, gzipSync, type BrotliOptions, type ZlibOptions } from 'node:zlib';
import { ENCODING_SUFFIX, ENCODINGS, type Encoding } from '../contract/encodings.js';
import { digest, type Digest } from './manifest.js';

/**
 * Brotli 4 and gzip 5: each level above saves a few percent of bytes for much more CPU, paid by every build and by
 * the shim on every composed body (bench/README.md). A change of level changes every variant's bytes, and so the
 * golden tree.
 */
const BROTLI_QUALITY = 4;
const GZIP_LEVEL = 5;

const brotliOptions = (bytes: Uint8Array): BrotliOptions => ({
  params: { [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.byteLength },
});
const gzipOptions: ZlibOptions = { level: GZIP_LEVEL };
const br = promisify(brotliCompress);
const gz = promisify(gzip);

/** On zlib's threads: the shim compresses a large body without holding its event loop. */
export function compress(bytes: Uint8Array, encoding: Encoding): Promise<Buffer> {
  return encoding === 'br' ? br(bytes, brotliOptions(bytes)) : gz(bytes, gzipOptions);
}

/** On the calling thread, the same bytes as `compress`. */
export function compressSync(bytes: Uint8Array, encoding: Encoding): Buffer {
  return encoding === 'br' ? brotliCompressSync(bytes, brotliOptions(bytes)) : gzipSync(bytes, gzipOptions);
}

export interface Variant {
  path: string;
  bytes: Buffer;
  digest: Digest;
}

/** Both variants of one file, named by ENCODING_SUFFIX. */
export function variants(path: string, bytes: Uint8Array): Record<Encoding, Variant> {
  return Object.fromEntries(
    ENCODINGS.map((e) => {
      const b = compressSync(bytes, e);
      return [e, { path: path + ENCODING_SUFFIX[e], bytes: b, digest: digest(b) }];
    }),
  ) as Record<Encoding, Variant>;
}
