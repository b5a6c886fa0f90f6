/**
 * The edge's operator routes, under `/_operator/`: `GET /_operator/usage?month=YYYY-MM` answers every credential's
 * requests in that month from the quota directory (durable-quota.ts, decision 98), as `{month, credentials:
 * {credential: requests}}`, which `risk-readings usage --quotas https://WORKER/` reads; `GET /_operator/webhooks`
 * lists every customer's webhook endpoint as the operator sees it (never a secret), and `POST
 * /_operator/webhooks/{id}/disable` (JSON `{reason?}`) and `.../enable` switch one (decision 108), which
 * `risk-readings webhooks --quotas https://WORKER/` calls. They exist only where the OPERATOR_TOKEN secret is set (and
 * the store each reads is bound), and answer only `Authorization: Bearer <OPERATOR_TOKEN>`, compared in constant
 * time: without it, or with another token, the request goes on to the API, whose answer to a path it does not have is
 * its usual 404. Never counted toward a quota (no credential of the API is read) and never cached.
 */
import { directoryOf, type DurableObjectNamespaceLike } from './durable-quota.js';
import { toWebResponse } from './exchange.js';
import { requestId, type AccessEvent } from './handler.js';
import { monthName, monthOf } from './quota.js';
import { Refusal, refusalResponse } from './refusal.js';
import { JSON_TYPE, uncachedJson } from './representation.js';
import { sha256 } from './sha256.js';
import { operatorView, switchEndpoint, type WebhookStore } from './webhooks/store.js';

export const OPERATOR_PREFIX = '/_operator/';
export const OPERATOR_USAGE = '/_operator/usage';
export const OPERATOR_WEBHOOKS = '/_operator/webhooks';
const SWITCH = /^\/_operator\/webhooks\/(ep_[0-9a-f]{24})\/(enable|disable)$/;
const MONTH = /^\d{4}-(0[1-9]|1[0-2])$/;

/** Whether two texts are equal, in a time that depends on neither (their SHA-256 digests compared in full). */
async function sameSecret(given: string, expected: string): Promise<boolean> {
  const [a, b] = await Promise.all([sha256(given), sha256(expected)]);
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

/**
 * The routes' answer to `request`, or null when the request is not the operator's (another path, another method, no
 * token or a wrong one): the API answers it then, as it would without the routes.
 */
export type OperatorRoute = (request: Request, now: number) => Promise<Response | null>;

interface OperatorOptions {
  /** OPERATOR_TOKEN without the blanks around it (a secret pasted with its line's end; the CLI trims what it sends). */
  token: string;
  /** The quota directory; without it there is no usage route. */
  directory?: DurableObjectNamespaceLike;
  /** The webhook endpoints; without them there are no webhook routes. */
  webhooks?: WebhookStore;
  log: (message: string) => void;
  /** The access line, as the API's requests have theirs (route `operator`, no credential). */
  access: (event: AccessEvent) => void;
}

const json = (data: unknown): Response => toWebResponse(uncachedJson(200, data, {}));
const refused = (r: Refusal) => toWebResponse(refusalResponse(r));

export function operatorRoute({ token, directory, webhooks, log, access }: OperatorOptions): OperatorRoute {
  const usage = async (url: URL, dir: DurableObjectNamespaceLike, now: number): Promise<Response> => {
    const month = url.searchParams.get('month') ?? monthName(monthOf(now).start);
    if (!MONTH.test(month)) return refused(new Refusal('bad_parameter', `month takes YYYY-MM, not "${month.slice(0, 16)}"`));
    try {
      const res = await directoryOf(dir).fetch(`https://quota.internal/months?month=${month}`, {});
      if (!res.ok) throw new Error(`it answered ${res.status}`);
      const body = new Uint8Array(await res.arrayBuffer());
      return new Response(body, {
        headers: { 'Content-Type': JSON_TYPE, 'Content-Length': String(body.byteLength), 'Cache-Control': 'no-store' },
      });
    } catch (e) {
      log(`operator: the quota directory could not be read (${(e as Error).message})`);
      return refused(new Refusal('upstream_error', 'The quota directory could not be read'));
    }
  };
  const switched = async (request: Request, store: WebhookStore, id: string, enable: boolean, now: number): Promise<Response> => {
    let reason: string | undefined;
    if (!enable) {
      const body = (await request.json().catch(() => ({}))) as { reason?: unknown };
      reason = typeof body?.reason === 'string' ? body.reason.slice(0, 256) : undefined;
    }
    if (!(await switchEndpoint(store, id, enable, now, reason))) return refused(new Refusal('not_found', `No webhook endpoint ${id}`));
    return json({ id, enabled: enable });
  };
  /** The answer of the route a request names, or null for none of them. */
  const route = (request: Request, url: URL, now: number): Promise<Response> | null => {
    if (request.method === 'GET' && url.pathname === OPERATOR_USAGE && directory) return usage(url, directory, now);
    if (!webhooks) return null;
    if (request.method === 'GET' && url.pathname === OPERATOR_WEBHOOKS)
      return webhooks.list().then((all) => json({ endpoints: all.map(operatorView) }));
    const m = request.method === 'POST' ? SWITCH.exec(url.pathname) : null;
    return m ? switched(request, webhooks, m[1]!, m[2] === 'enable', now) : null;
  };
  return async (request, now) => {
    const url = new URL(request.url);
    if (!url.pathname.startsWith(OPERATOR_PREFIX)) return null;
    const auth = request.headers.get('authorization') ?? '';
    if (!auth.startsWith('Bearer ') || !(await sameSecret(auth.slice(7).trim(), token))) return null;
    const start = performance.now();
    const answering = route(request, url, now);
    if (!answering) return null;
    const res = await answering.catch((e: unknown) => {
      log(`operator: ${url.pathname}: ${(e as Error).message}`);
      return refused(new Refusal('upstream_error', 'The store behind this route could not be read'));
    });
    const id = requestId(request.headers.get('x-request-id'));
    res.headers.set('X-Request-Id', id);
    access({
      method: request.method,
      path: url.pathname,
      request_id: id,
      route: 'operator',
      status: res.status,
      plan: null,
      credential: null,
      code: res.ok ? null : res.status === 400 ? 'bad_parameter' : res.status === 404 ? 'not_found' : 'upstream_error',
      bytes: Number(res.headers.get('content-length') ?? 0),
      ms: performance.now() - start,
    });
    return res;
  };
}
