/**
 * The compressed variants of a tree's files (decision 23), made once at build time on a thread of their own
 * (compressor.ts) while the build's thread serialises and validates the rest, and the shim's compression of a body
 * cut on the fly. Both codings are deterministic for the same bytes and settings, so trees stay byte-identical.
 */
import { promisify } from 'node:util';
import { brotliCompress, brotliCompressSync, constants, gzip, gzipSync, type BrotliOptions, type ZlibOptions } from 'node:zlib';
import type { Encoding } from '../contract/encodings.js';

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
