/** Where the shim reads the built tree: an interface, so the Node server and the edge function differ only here. */
import type { Encoding } from '../generator/contract/encodings.js';

export interface Representation {
  bytes: Uint8Array<ArrayBuffer>;
  /** Strong ETag, quoted, from the build manifest. */
  etag: string;
}

export interface OriginFile extends Representation {
  /** The file's compressed variants written by the build (decision 23), each with its own tag. */
  encoded?: Partial<Record<Encoding, Representation>>;
}

/** Thrown when the origin cannot be read at all (the shim answers 502 upstream_error). */
export class OriginError extends Error {}

export interface Origin {
  /** A file of `v1/` by its path inside it; null when the tree has no such file. */
  get(path: string): Promise<OriginFile | null>;
  /** The file if it is already in memory, without waiting (undefined: ask `get`). Lets the hot path stay synchronous. */
  peek?(path: string): OriginFile | undefined;
}

const decoder = new TextDecoder();

/** Parsed JSON documents of an origin, memoized per ETag: a rebuilt tree brings new tags and fresh parses. */
export class JsonCache {
  private docs = new Map<string, { etag: string; doc: unknown }>();
  constructor(
    private origin: Origin,
    private limit = 512,
  ) {}
  /** The parsed document when its bytes are in memory and already parsed; undefined otherwise. */
  peek<T>(path: string): { doc: T; etag: string } | undefined {
    const file = this.origin.peek?.(path);
    const hit = file && this.docs.get(path);
    return hit && hit.etag === file.etag ? (hit as { doc: T; etag: string }) : undefined;
  }

  async get<T>(path: string): Promise<{ doc: T; etag: string } | null> {
    const file = this.origin.peek?.(path) ?? (await this.origin.get(path));
    if (!file) return null;
    const hit = this.docs.get(path);
    if (hit && hit.etag === file.etag) return hit as { doc: T; etag: string };
    let doc: unknown;
    try {
      doc = JSON.parse(decoder.decode(file.bytes));
    } catch {
      throw new OriginError(`${path}: not JSON`);
    }
    if (this.docs.size >= this.limit) this.docs.delete(this.docs.keys().next().value!);
    this.docs.set(path, { etag: file.etag, doc });
    return { doc: doc as T, etag: file.etag };
  }
}
