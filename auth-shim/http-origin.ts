/** An origin read over HTTP (a CDN or static host serving the built tree): the edge entry's origin. */
import { ENCODING_SUFFIX, TREE, type Encoding } from '../generator/contract/index.js';
import type { Manifest } from '../generator/contract/shapes.js';
import { OriginError, type Origin, type OriginFile } from './origin.js';

export class HttpOrigin implements Origin {
  private manifest: { at: number; files: Manifest['files'] } | undefined;
  private files = new Map<string, OriginFile>();

  /** `base` is the URL under which `v1/` is served; the manifest is re-read every `ttlMs`. */
  // The default calls the global `fetch` unbound: Workers runtimes refuse it called as a method of another object.
  constructor(
    private base: string,
    private ttlMs = 60_000,
    private fetcher: (url: string) => Promise<Response> = (url) => fetch(url),
  ) {}

  private async fetchBytes(path: string): Promise<Uint8Array<ArrayBuffer> | null> {
    let res: Response;
    try {
      res = await this.fetcher(new URL(`v1/${path}`, this.base.endsWith('/') ? this.base : this.base + '/').toString());
    } catch (e) {
      throw new OriginError(`${path}: ${(e as Error).message}`);
    }
    if (res.status === 404) return null;
    if (!res.ok) throw new OriginError(`${path}: origin answered ${res.status}`);
    return new Uint8Array(await res.arrayBuffer());
  }

  private async currentManifest(): Promise<Manifest['files']> {
    const now = Date.now();
    if (!this.manifest || now - this.manifest.at > this.ttlMs) {
      const bytes = await this.fetchBytes(TREE.manifest);
      if (!bytes) throw new OriginError(`${TREE.manifest}: absent from the origin`);
      this.manifest = { at: now, files: (JSON.parse(new TextDecoder().decode(bytes)) as Manifest).files };
    }
    return this.manifest.files;
  }

  async get(path: string): Promise<OriginFile | null> {
    const entry = (await this.currentManifest())[path];
    if (!entry) return null;
    const etag = `"${entry.sha256}"`;
    const cached = this.files.get(path);
    if (cached?.etag === etag) return cached;
    // The file and its compressed variants, fetched together once per tree.
    const names = [path, ...Object.keys(entry.encodings ?? {}).map((e) => path + ENCODING_SUFFIX[e as Encoding])];
    const [bytes, ...variants] = await Promise.all(names.map((n) => this.fetchBytes(n)));
    names.forEach((n, i) => {
      if (!(i === 0 ? bytes : variants[i - 1])) throw new OriginError(`${n}: listed in the manifest but absent from the origin`);
    });
    const encoded = Object.entries(entry.encodings ?? {}).map(([e, d], i) => [e, { bytes: variants[i]!, etag: `"${d!.sha256}"` }]);
    if (this.files.size >= 1024) this.files.delete(this.files.keys().next().value!);
    const file: OriginFile = { bytes: bytes!, etag, ...(encoded.length ? { encoded: Object.fromEntries(encoded) } : {}) };
    this.files.set(path, file);
    return file;
  }
}
