/**
 * The one way a step refuses a request: it throws a Refusal, and the handler answers it with the spec's status
 * and error body (decisions 2 and 3). Headers a refusal carries (Retry-After, RateLimit-*, Allow) go out with it.
 */
import { ERROR_STATUS, errorBody, type ErrorCode } from '../generator/contract/index.js';
import type { ShimResponse } from './exchange.js';
import { JSON_TYPE } from './representation.js';

export class Refusal {
  constructor(
    readonly code: ErrorCode,
    readonly message: string,
    readonly headers: Record<string, string> = {},
  ) {}
}

const encoder = new TextEncoder();
/**
 * Error bodies by code and message, encoded once: most refusals repeat (a 404, a 401 naming the same header, a 429
 * a given number of seconds from its reset). Bounded, as messages may quote what a request sent.
 */
const BODIES = new Map<string, Uint8Array<ArrayBuffer>>();
const MAX_BODIES = 1_000;

function body(code: ErrorCode, message: string): Uint8Array<ArrayBuffer> {
  const key = `${code}\n${message}`;
  let bytes = BODIES.get(key);
  if (!bytes) {
    if (BODIES.size >= MAX_BODIES) BODIES.clear();
    BODIES.set(key, (bytes = encoder.encode(JSON.stringify(errorBody(code, message))) as Uint8Array<ArrayBuffer>));
  }
  return bytes;
}

/** How long a client waits before asking a gateway that is not configured again (decision 40: every 503 says one). */
const UNAVAILABLE_RETRY_S = '60';

/** The response for a refusal; `extra` adds headers every response to this caller carries (the rate limits). */
export function refusalResponse(r: Refusal, extra: Record<string, string> = {}): ShimResponse {
  const bytes = body(r.code, r.message);
  const status = ERROR_STATUS[r.code];
  const retry: Record<string, string> = status === 503 ? { 'Retry-After': UNAVAILABLE_RETRY_S } : {};
  return {
    status,
    headers: {
      'Content-Type': JSON_TYPE,
      'Content-Length': String(bytes.byteLength),
      'Cache-Control': 'no-store',
      ...retry,
      ...extra,
      ...r.headers,
    },
    body: bytes,
    code: r.code,
  };
}
