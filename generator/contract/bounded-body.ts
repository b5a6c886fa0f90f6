/**
 * How every reader of an origin takes a body (the edge's origin, the build's `--previous URL`): never more than the
 * tree says the file holds. The origin is not trusted to behave: a `Content-Length` past the limit is refused before
 * a byte is read, and the body is read as a stream, counted after decompression (a runtime's fetch decodes a
 * `Content-Encoding` itself, so a small gzip body can be gigabytes), and given up one chunk past the limit. A reader
 * that took the body whole (`arrayBuffer()`) would hold whatever the origin sent before it could compare.
 */

/**
 * The most bytes a tree's manifest may have: the manifest of 161 assets has a few hundred KB, and it is the one
 * file whose size no manifest declares.
 */
export const MANIFEST_MAX_BYTES = 16 << 20;

/** A body past its limit, announced or sent. The message names the cause, not the URL (the reader knows it). */
export class BodyTooLarge extends Error {}

/**
 * The body of `res`, at most `limit` bytes, or BodyTooLarge. `next` wraps each read (the build's reader puts an idle
 * limit on it); anything else a read throws (the runtime's abort, a connection cut) is thrown as it is.
 */
export async function readBounded(
  res: Response,
  limit: number,
  next: (read: Promise<ReadableStreamReadResult<Uint8Array>>) => Promise<ReadableStreamReadResult<Uint8Array>> = (read) => read,
): Promise<Uint8Array<ArrayBuffer>> {
  const declared = Number(res.headers.get('content-length') ?? NaN);
  // With a Content-Encoding the length is the encoded one: the decoded body is counted as it is read instead.
  if (!res.headers.get('content-encoding') && declared > limit) {
    await res.body?.cancel().catch(() => {});
    throw new BodyTooLarge(`the origin announced ${declared} bytes where the tree has ${limit} at most`);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = res.body?.getReader();
  if (reader)
    for (;;) {
      const chunk = await next(reader.read());
      if (chunk.done) break;
      size += chunk.value.byteLength;
      if (size > limit) {
        // What the origin still sends is not read: cancelling the stream lets the runtime close the connection.
        void reader.cancel().catch(() => {});
        throw new BodyTooLarge(`the body runs past ${limit} bytes, more than the tree has`);
      }
      chunks.push(chunk.value);
    }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.byteLength;
  }
  return bytes;
}
