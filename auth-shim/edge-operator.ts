/**
 * The edge's operator route (decision 98): `GET /_operator/usage?month=YYYY-MM` answers every credential's requests
 * in that month, from the quota directory (durable-quota.ts), as `{month, credentials: {credential: requests}}`;
 * `risk-readings usage --quotas https://WORKER/` reads it. It exists only where the OPERATOR_TOKEN secret is set, and
 * answers only `Authorization: Bearer <OPERATOR_TOKEN>`, compared in constant time: without it, or with another
 * token, the request goes on to the API, whose answer to a path it does not have is its usual 404. Never counted
 * toward a quota (no credential of the API is read) and never cached.
 */
import { directoryOf, type DurableObjectNamespaceLike } from './durable-quota.js';
import { toWebResponse } from './exchange.js';
import { requestId, type AccessEvent } from './handler.js';
import { monthName, monthOf } from './quota.js';
import { Refusal, refusalResponse } from './refusal.js';
import { JSON_TYPE } from './representation.js';
import { sha256 } from './sha256.js';

export const OPERATOR_PATH = '/_operator/usage';
const MONTH = /^\d{4}-(0[1-9]|1[0-2])$/;

/** Whether two texts are equal, in a time that depends on neither (their SHA-256 digests compared in full). */
async function sameSecret(given: string, expected: string): Promise<boolean> {
  const [a, b] = await Promise.all([sha256(given), sha256(expected)]);
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

/**
 * The route's answer to `request`, or null when the request is not the operator's (another path, another method, no
 * token or a wrong one): the API answers it then, as it would without the route.
 */
export type OperatorRoute = (request: Request, now: number) => Promise<Response | null>;

interface OperatorOptions {
  /** OPERATOR_TOKEN without the blanks around it (a secret pasted with its line's end; the CLI trims what it sends). */
  token: string;
  directory: DurableObjectNamespaceLike;
  log: (message: string) => void;
  /** The access line, as the API's requests have theirs (route `operator`, no credential). */
  access: (event: AccessEvent) => void;
}

export function operatorRoute({ token, directory, log, access }: OperatorOptions): OperatorRoute {
  const answer = async (url: URL, now: number): Promise<Response> => {
    const month = url.searchParams.get('month') ?? monthName(monthOf(now).start);
    if (!MONTH.test(month))
      return toWebResponse(refusalResponse(new Refusal('bad_parameter', `month takes YYYY-MM, not "${month.slice(0, 16)}"`)));
    try {
      const res = await directoryOf(directory).fetch(`https://quota.internal/months?month=${month}`, {});
      if (!res.ok) throw new Error(`it answered ${res.status}`);
      const body = new Uint8Array(await res.arrayBuffer());
      const headers = { 'Content-Type': JSON_TYPE, 'Content-Length': String(body.byteLength), 'Cache-Control': 'no-store' };
      return new Response(body, { headers });
    } catch (e) {
      log(`operator: the quota directory could not be read (${(e as Error).message})`);
      return toWebResponse(refusalResponse(new Refusal('upstream_error', 'The quota directory could not be read')));
    }
  };
  return async (request, now) => {
    const url = new URL(request.url);
    if (url.pathname !== OPERATOR_PATH || request.method !== 'GET') return null;
    const auth = request.headers.get('authorization') ?? '';
    if (!auth.startsWith('Bearer ') || !(await sameSecret(auth.slice(7).trim(), token))) return null;
    const start = performance.now();
    const res = await answer(url, now);
    const id = requestId(request.headers.get('x-request-id'));
    res.headers.set('X-Request-Id', id);
    access({
      method: 'GET',
      path: OPERATOR_PATH,
      request_id: id,
      route: 'operator',
      status: res.status,
      plan: null,
      credential: null,
      code: res.ok ? null : res.status === 400 ? 'bad_parameter' : 'upstream_error',
      bytes: Number(res.headers.get('content-length') ?? 0),
      ms: performance.now() - start,
    });
    return res;
  };
}
