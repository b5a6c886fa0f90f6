/**
 * An origin read over HTTP (a CDN or static host serving the built tree): the edge entry's origin. Every file is
 * held to the manifest (its size and SHA-256, each variant's too) before it is served or kept: an origin serving
 * something else is a 502, and nothing of it is cached. No body is read past what the tree holds (readBounded): a
 * file past its declared size, the manifest past the build's cap, so an origin sending gigabytes costs the isolate
 * (128 MB on Cloudflare) a chunk, not its life. Each read has a deadline, so an origin that never answers is a 502
 * too, not a hanging request. The origin's token goes to that origin only: a redirect is followed within it, and
 * one to another origin is a 502 (fetchWithinOrigin). Every failure names the URL it read, never the token (a
 * header), so an operator whose ORIGIN_URL or ORIGIN_TOKEN is wrong reads which in the log.
 */
import { BodyTooLarge, MANIFEST_MAX_BYTES, readBounded } from '../generator/contract/bounded-body.js';
import { asManifest, ENCODING_SUFFIX, TREE, type Encoding } from '../generator/contract/index.js';
import { fetchWithinOrigin, RedirectRefused, type Fetcher } from '../generator/contract/redirects.js';
import type { Manifest } from '../generator/contract/shapes.js';
import { treeBase } from '../generator/contract/tree-url.js';
import { sha256Hex } from './sha256.js';
import { OriginError, type Origin, type OriginFile } from './origin.js';

export interface HttpOriginOptions {
  /** The bearer token the origin requires (sent as `Authorization: Bearer`, to `base`'s origin and no other). */
  token?: string;
  /** How long the manifest read is trusted before it is read again (default 60 s). */
  ttlMs?: number;
  /** How long a file's read (its answer and its body) may take (default 10 s). */
  timeoutMs?: number;
  /** The fetch to read with (default: the global one). */
  fetcher?: Fetcher;
}

/**
 * The base every tree path is under, by the rule `build --previous` follows (treeBase: the folder holding `v1/`, or
 * `v1/` itself), or why the configured URL cannot be one. Every failure is logged with the URL it read, so a URL
 * carrying a user name or password is refused without echoing it: the secret would reach the log, and the token
 * has its own binding.
 */
function baseOf(url: string): { base: string } | { problem: string } {
  if (!URL.canParse(url)) return { problem: 'ORIGIN_URL is not an absolute URL (https://host/path)' };
  const u = new URL(url);
  if (u.username || u.password)
    return { problem: `ORIGIN_URL (${u.origin}) carries a user name or password, which is not sent: the origin's token is ORIGIN_TOKEN` };
  // wrangler.toml's placeholder: .invalid never resolves (RFC 6761), so say what to do rather than how DNS failed.
  if (u.hostname.endsWith('.invalid'))
    return { problem: `ORIGIN_URL is ${u.href}, a placeholder: set it to the URL under which the tree's v1/ is served` };
  return { base: treeBase(url) };
}

export class HttpOrigin implements Origin {
  private manifest: { at: number; files: Manifest['files'] } | undefined;
  private files = new Map<string, OriginFile>();

  private readonly where: { base: string } | { problem: string };
  private readonly ttlMs: number;
  private readonly timeoutMs: number;
  private readonly fetcher: Fetcher;
  private readonly withToken: boolean;

  /** `base` is the URL under which `v1/` is served, or that of `v1/` itself. */
  constructor(base: string, { token, ttlMs = 60_000, timeoutMs = 10_000, fetcher }: HttpOriginOptions = {}) {
    this.where = baseOf(base);
    this.ttlMs = ttlMs;
    this.timeoutMs = timeoutMs;
    this.withToken = !!token;
    // The global fetch is called unbound: Workers runtimes refuse it called as a method of another object.
    const read: Fetcher = fetcher ?? ((url, init) => fetch(url, init));
    this.fetcher = token ? (url, init) => read(url, { ...init, headers: { authorization: `Bearer ${token}` } }) : read;
  }

  /** The URL a file of the tree is read from: what every failure names (never the token, which is a header). */
  private urlOf(path: string): string {
    if ('problem' in this.where) throw new OriginError(this.where.problem);
    return new URL(path, this.where.base).toString();
  }

  /** The file's bytes, at most `limit` of them; null for a 404. */
  private async fetchBytes(path: string, limit: number): Promise<Uint8Array<ArrayBuffer> | null> {
    const url = this.urlOf(path);
    const signal = AbortSignal.timeout(this.timeoutMs);
    try {
      const res = await fetchWithinOrigin(this.fetcher, url, { signal });
      if (!res.ok) await res.body?.cancel().catch(() => {});
      if (res.status === 404) return null;
      if (res.status === 401 || res.status === 403)
        throw new OriginError(
          this.withToken
            ? `${url}: the origin refused the token (${res.status}): ORIGIN_TOKEN is not one it accepts`
            : `${url}: the origin refused the request (${res.status}): it wants a token, and ORIGIN_TOKEN is not set`,
        );
      if (!res.ok) throw new OriginError(`${url}: the origin answered ${res.status}`);
      return await readBounded(res, limit);
    } catch (e) {
      if (e instanceof OriginError) throw e;
      if (e instanceof BodyTooLarge) throw new OriginError(`${url}: ${e.message}`);
      if (e instanceof RedirectRefused) throw new OriginError(e.message);
      throw new OriginError(
        signal.aborted ? `${url}: the origin did not answer within ${this.timeoutMs / 1000} s` : `${url}: ${(e as Error).message}`,
      );
    }
  }

  /** The bytes of a file the manifest lists, held to its entry. */
  private async verified(path: string, expected: { size: number; sha256: string }): Promise<Uint8Array<ArrayBuffer>> {
    const bytes = await this.fetchBytes(path, expected.size);
    if (!bytes) throw new OriginError(`${this.urlOf(path)}: listed in the manifest but absent from the origin (404)`);
    if (bytes.byteLength !== expected.size || (await sha256Hex(bytes)) !== expected.sha256)
      throw new OriginError(`${this.urlOf(path)}: the origin's bytes do not match the manifest (size or sha256)`);
    return bytes;
  }

  private async currentManifest(): Promise<Manifest['files']> {
    const now = Date.now();
    if (!this.manifest || now - this.manifest.at > this.ttlMs) {
      const url = this.urlOf(TREE.manifest);
      const bytes = await this.fetchBytes(TREE.manifest, MANIFEST_MAX_BYTES);
      if (!bytes)
        throw new OriginError(`${url}: absent from the origin (404): ORIGIN_URL must be the URL under which the tree's v1/ is served`);
      let json: unknown;
      try {
        json = JSON.parse(new TextDecoder().decode(bytes));
      } catch {
        throw new OriginError(`${url}: not JSON`);
      }
      this.manifest = { at: now, files: asManifest(json, (problem) => new OriginError(`${url}: ${problem}`)).files };
    }
    return this.manifest.files;
  }

  async get(path: string): Promise<OriginFile | null> {
    const entry = (await this.currentManifest())[path];
    if (!entry) return null;
    const etag = `"${entry.sha256}"`;
    const cached = this.files.get(path);
    if (cached?.etag === etag) return cached;
    // The file and its compressed variants, fetched together once per tree, each checked against the manifest.
    const codings = Object.entries(entry.encodings ?? {}) as [Encoding, { size: number; sha256: string }][];
    const [bytes, ...variants] = await Promise.all([
      this.verified(path, entry),
      ...codings.map(([e, d]) => this.verified(path + ENCODING_SUFFIX[e], d)),
    ]);
    const encoded = codings.map(([e, d], i) => [e, { bytes: variants[i]!, etag: `"${d.sha256}"` }]);
    if (this.files.size >= 1024) this.files.delete(this.files.keys().next().value!);
    const file: OriginFile = { bytes: bytes!, etag, ...(encoded.length ? { encoded: Object.fromEntries(encoded) } : {}) };
    this.files.set(path, file);
    return file;
  }
}
