/** A body read from an origin never past its limit: refused when announced, given up a chunk past it when sent. */
import { describe, expect, it } from 'vitest';
import { BodyTooLarge, readBounded } from '../../../generator/contract/bounded-body.js';

/** A response whose body is `chunks` chunks of `size` bytes, counting how many the reader pulled. */
function counted(chunks: number, size: number, headers: Record<string, string> = {}) {
  const seen = { pulled: 0, cancelled: false };
  const body = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (seen.pulled === chunks) return controller.close();
        controller.enqueue(new Uint8Array(size).fill(seen.pulled++ % 256));
      },
      cancel: () => void (seen.cancelled = true),
    },
    { highWaterMark: 0 },
  );
  return { res: new Response(body, { headers }), seen };
}

describe('readBounded', () => {
  it('reads a body up to its limit whole, in order', async () => {
    const { res } = counted(3, 4);
    expect([...(await readBounded(res, 12))]).toEqual([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]);
    expect((await readBounded(new Response(null), 0)).byteLength).toBe(0);
  });

  it('gives up one chunk past the limit and cancels the rest, however long the body is', async () => {
    const { res, seen } = counted(1_000_000, 1024);
    await expect(readBounded(res, 10 * 1024 + 1)).rejects.toThrow(
      new BodyTooLarge('the body runs past 10241 bytes, more than the tree has'),
    );
    expect(seen.pulled).toBe(11);
    expect(seen.cancelled).toBe(true);
  });

  it('refuses a Content-Length past the limit before reading a byte; an encoded length is not the decoded one', async () => {
    const announced = counted(1_000_000, 1024, { 'content-length': String(2 ** 31) });
    await expect(readBounded(announced.res, 1024)).rejects.toThrow(
      new BodyTooLarge('the origin announced 2147483648 bytes where the tree has 1024 at most'),
    );
    expect(announced.seen.pulled).toBe(0);
    expect(announced.seen.cancelled).toBe(true);
    // An encoded body's length says nothing of its decoded size: that is counted as it is read.
    const encoded = counted(2, 512, { 'content-length': '2048', 'content-encoding': 'gzip' });
    expect((await readBounded(encoded.res, 1024)).byteLength).toBe(1024);
  });

  it('reads each chunk through `next`, which may give up on its own', async () => {
    const { res } = counted(5, 1);
    let reads = 0;
    const idle = new Error('the origin sent nothing');
    await expect(readBounded(res, 100, (read) => (++reads === 3 ? Promise.reject(idle) : read))).rejects.toBe(idle);
  });
});
