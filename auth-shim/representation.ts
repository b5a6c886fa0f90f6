/**
 * How a body goes out (decisions 18 and 23): the coding the request accepts, that coding's strong ETag, and
 * 304 when If-None-Match names any tag of the resource. Files bring their variants from the build; composed
 * bodies (history cuts, bulk) are compressed here. Runtime-neutral.
 */
import { COMPRESS_MIN_BYTES, negotiate, type Encoding } from '../generator/contract/encodings.js';
import { toJson } from '../generator/contract/json.js';
import type { ShimRequest, ShimResponse } from './exchange.js';
import type { OriginFile, Representation } from './origin.js';

type Compress = (bytes: Uint8Array<ArrayBuffer>, encoding: Encoding) => Promise<Uint8Array<ArrayBuffer>>;

/** What a runtime can compress on the fly, best first. */
export interface Compressor {
  encodings: readonly Encoding[];
  compress: Compress;
}

/** The web platform's CompressionStream: gzip in every runtime the shim runs in (Node 20, workerd). */
export const webCompressor: Compressor = {
  encodings: ['gzip'],
  async compress(bytes, encoding) {
    const stream = new Blob([bytes]).stream().pipeThrough(new CompressionStream(encoding as 'gzip'));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  },
};

export const JSON_TYPE = 'application/json; charset=utf-8';

const encoder = new TextEncoder();
/** A body made for this caller alone (its standing, its endpoints), as JSON: never cached. */
export function uncachedJson(status: number, doc: unknown, headers: Record<string, string>): ShimResponse {
  const bytes = encoder.encode(toJson(doc)) as Uint8Array<ArrayBuffer>;
  return {
    status,
    headers: { 'Content-Type': JSON_TYPE, 'Content-Length': String(bytes.byteLength), 'Cache-Control': 'no-store', ...headers },
    body: bytes,
    code: null,
  };
}

/** If-None-Match against the tags of every representation (weak comparison, as RFC 9110 asks for this header). */
function matches(request: ShimRequest, tags: string[]): boolean {
  const inm = request.headers.get('if-none-match');
  if (!inm) return false;
  if (inm.trim() === '*') return true;
  return inm.split(',').some((t) => tags.includes(t.trim().replace(/^W\//, '')));
}

function send(
  request: ShimRequest,
  chosen: Representation,
  encoding: Encoding | null,
  all: string[],
  varies: boolean,
  h: Record<string, string>,
): ShimResponse {
  h['Content-Type'] ??= JSON_TYPE; // the docs page's files bring their own
  h.ETag = chosen.etag;
  if (varies) h.Vary = h.Vary ? `${h.Vary}, Accept-Encoding` : 'Accept-Encoding';
  if (matches(request, all)) return { status: 304, headers: h, body: null, code: null };
  if (encoding) h['Content-Encoding'] = encoding;
  // A known length lets the server send headers and body in one write instead of chunked framing.
  h['Content-Length'] = String(chosen.bytes.byteLength);
  return { status: 200, headers: h, body: chosen.bytes, code: null };
}

/**
 * A file of the tree, in the coding the request prefers among those the build wrote. `headers` is this response's
 * own object, completed in place (a copy per response would cost the hot path a share of its rate).
 */
export function fileResponse(request: ShimRequest, f: OriginFile, headers: Record<string, string>): ShimResponse {
  const codings = f.encoded ? (Object.keys(f.encoded) as Encoding[]) : [];
  const encoding = negotiate(request.headers.get('accept-encoding'), codings);
  const tags = [f.etag, ...codings.map((c) => f.encoded![c]!.etag)];
  return send(request, encoding ? f.encoded![encoding]! : f, encoding, tags, codings.length > 0, headers);
}

/**
 * A body made for this request, tagged from `hash` (a digest of what it was made from), compressed if worth it;
 * `headers` is completed in place, as for fileResponse.
 */
export async function composedResponse(
  request: ShimRequest,
  bytes: Uint8Array<ArrayBuffer>,
  hash: string,
  compressor: Compressor,
  headers: Record<string, string>,
): Promise<ShimResponse> {
  const big = bytes.byteLength > COMPRESS_MIN_BYTES;
  const codings = big ? compressor.encodings : [];
  const tag = (e: Encoding | null) => (e ? `"${hash}-${e}"` : `"${hash}"`);
  const tags = [tag(null), ...codings.map(tag)];
  const encoding = negotiate(request.headers.get('accept-encoding'), codings);
  if (matches(request, tags)) return send(request, { bytes, etag: tag(encoding) }, encoding, tags, big, headers);
  const body = encoding ? await compressor.compress(bytes, encoding) : bytes;
  return send(request, { bytes: body, etag: tag(encoding) }, encoding, tags, big, headers);
}
