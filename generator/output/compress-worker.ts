/** Worker thread: makes the compressed variants of each file it is sent (compressor.ts), one message each way. */
import { parentPort } from 'node:worker_threads';
import { ENCODINGS } from '../contract/encodings.js';
import { compressSync } from './compress.js';

parentPort!.on('message', ({ id, bytes }: { id: number; bytes: Uint8Array }) => {
  parentPort!.postMessage({ id, out: ENCODINGS.map((e) => compressSync(bytes, e)) });
});
