/** Worker thread: makes the compressed variants of each file it is sent (compressor.ts), one message each way. */
import { parentPort } from 'node:worker_threads';
import { ENCODINGS } from '../contract/encodings.js';
import { compressSync } from './compress.js';

parentPort!.on('message', ({ id, bytes }: { id: number; bytes: Uint8Array }) => {
  // Each variant is copied to memory of its own size and moved to the build's thread, not cloned: zlib returns a view
  // into its output chunk (Node 24's are 64 KB for gzip, 16 KB for brotli), and a clone copies the chunk whole, 80 KB
  // for a file's two variants of a few hundred bytes each, left for the build's thread to collect.
  const out = ENCODINGS.map((e) => new Uint8Array(compressSync(bytes, e)));
  parentPort!.postMessage(
    { id, out },
    out.map((b) => b.buffer),
  );
});
