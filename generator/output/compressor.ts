/**
 * A tree's compressed variants, made on a thread of its own while the build's thread serialises and validates the
 * rest: the calling thread hands each file over and takes both variants back. From TypeScript sources (the test
 * runner) workers cannot start, and the variants are made on zlib's threads instead; the bytes are the same.
 */
import { Worker } from 'node:worker_threads';
import { ENCODINGS } from '../contract/encodings.js';
import { compress } from './compress.js';

export interface Compressor {
  /** Both variants of `bytes`, in ENCODINGS order. */
  variants(bytes: Uint8Array): Promise<Buffer[]>;
  close(): Promise<void>;
}

const compiled = import.meta.url.endsWith('.js');

export function compressor(): Compressor {
  if (!compiled) return { variants: (bytes) => Promise.all(ENCODINGS.map((e) => compress(bytes, e))), close: async () => {} };
  const worker = new Worker(new URL('./compress-worker.js', import.meta.url));
  const waiting = new Map<number, { resolve: (b: Buffer[]) => void; reject: (e: Error) => void }>();
  let next = 0;
  worker.on('message', ({ id, out }: { id: number; out: Uint8Array[] }) => {
    waiting.get(id)!.resolve(out.map((b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength)));
    waiting.delete(id);
  });
  worker.on('error', (e) => {
    for (const w of waiting.values()) w.reject(e);
    waiting.clear();
  });
  return {
    variants: (bytes) =>
      new Promise((resolve, reject) => {
        const id = next++;
        waiting.set(id, { resolve, reject });
        worker.postMessage({ id, bytes });
      }),
    close: async () => void (await worker.terminate()),
  };
}
