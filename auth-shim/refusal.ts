/**
 * The one way a step refuses a request: it throws a Refusal, and the handler answers it with the spec's status
 * and error body (decisions 2 and 3). Headers a refusal carries (Retry-After, RateLimit-*, Allow) go out with it.
 */
import { ERROR_STATUS, errorBody, type ErrorCode } from '../generator/contract/index.js';
import { JSON_TYPE, sized } from './representation.js';

export class Refusal {
  constructor(
    readonly code: ErrorCode,
    readonly message: string,
    readonly headers: Record<string, string> = {},
  ) {}
}

const encoder = new TextEncoder();
/** The error body's code travels with the response to the access log. */
const CODES = new WeakMap<Response, ErrorCode>();

/** The response for a refusal; `extra` adds headers every response to this caller carries (the rate limits). */
export function refusalResponse(r: Refusal, extra: Record<string, string> = {}): Response {
  const bytes = encoder.encode(JSON.stringify(errorBody(r.code, r.message)));
  const res = new Response(bytes, {
    status: ERROR_STATUS[r.code],
    headers: { 'Content-Type': JSON_TYPE, 'Content-Length': String(bytes.byteLength), 'Cache-Control': 'no-store', ...extra, ...r.headers },
  });
  CODES.set(res, r.code);
  return sized(res, bytes.byteLength);
}

export const errorCodeOf = (res: Response): ErrorCode | null => CODES.get(res) ?? null;
