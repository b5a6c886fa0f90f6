/**
 * The shim's own request and response: what the handler reads and what it makes. A web `Request` is already a
 * ShimRequest; the fetch entry turns a ShimResponse into a web `Response`, and the Node server writes one straight
 * to its socket, so a request on Node builds no web objects. Runtime-neutral.
 */
import type { ErrorCode } from '../generator/contract/index.js';

/** Request headers as the handler reads them: by lower-case name, several values joined with `, `. */
export interface HeaderSource {
  get(name: string): string | null;
  has(name: string): boolean;
}

export interface ShimRequest {
  method: string;
  /** The absolute URL. */
  url: string;
  headers: HeaderSource;
  /** The body as text, for the routes that take one (the webhooks'); a web Request has it. */
  text?(): Promise<string>;
}

export interface ShimResponse {
  status: number;
  headers: Record<string, string>;
  /** null for a 304. */
  body: Uint8Array<ArrayBuffer> | null;
  /** The error code of an error body, for the access log; null otherwise. */
  code: ErrorCode | null;
}

/** The web `Response` for a ShimResponse: what the fetch entry (the edge, the tests) returns. */
export function toWebResponse(r: ShimResponse): Response {
  // Workers runtimes would otherwise compress the body again for its Content-Encoding; Node ignores the field.
  const manual = r.headers['Content-Encoding'] ? { encodeBody: 'manual' } : {};
  return new Response(r.body, { status: r.status, headers: r.headers, ...manual } as ResponseInit);
}
