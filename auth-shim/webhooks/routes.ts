/**
 * The webhook routes (decision 108): a customer's endpoints under `/v1/webhooks`, managed with its credential. An
 * endpoint belongs to the caller's owner (a key's label, so a rolled key keeps them; a marketplace caller's user),
 * and another owner's is `404`. Runtime-neutral: the store, the sender and the address rules are given.
 */
import { DISCLAIMER, type Plan } from '../../generator/contract/index.js';
import {
  BodyProblem,
  readEndpointBody,
  WEBHOOK_BODY_MAX,
  WEBHOOK_ENDPOINTS,
  WEBHOOK_OLD_SECRET_MS,
} from '../../generator/contract/webhooks.js';
import type { Caller } from '../credentials.js';
import type { ShimRequest, ShimResponse } from '../exchange.js';
import { Refusal } from '../refusal.js';
import { uncachedJson } from '../representation.js';
import { urlProblem, type AddressPolicy } from './address.js';
import { attemptOf, type Send } from './deliverer.js';
import type { Feed } from './feed.js';
import { pendingMessages, testMessage } from './messages.js';
import { newSecret, signedHeaders } from './sign.js';
import { disabledBy, enabledAgain, type EndpointFields, type EndpointRecord, type WebhookStore } from './store.js';

export interface WebhookOptions {
  store: WebhookStore;
  /** Which URLs and addresses may be delivered to (the operator's `--webhooks-allow-loopback`, ports). */
  policy: AddressPolicy;
  send: Send;
}

/** What a webhook request names: the collection, one endpoint, or one of an endpoint's actions. */
export type WebhookRoute = { name: 'webhooks' } | { name: 'webhook'; id: string; action: 'test' | 'rotate-secret' | 'deliveries' | null };

/** The methods each of the routes takes (decision 108); HEAD answers as GET does. */
const METHODS: Record<string, readonly string[]> = {
  webhooks: ['GET', 'HEAD', 'POST'],
  webhook: ['GET', 'HEAD', 'PATCH', 'DELETE'],
  test: ['POST'],
  'rotate-secret': ['POST'],
  deliveries: ['GET', 'HEAD'],
};
const ID = /^ep_[0-9a-f]{24}$/;

/** The webhook route a path names, or null for a path that is not one. */
export function webhookRoute(pathname: string): WebhookRoute | null {
  if (pathname === '/v1/webhooks') return { name: 'webhooks' };
  const m = /^\/v1\/webhooks\/([^/]+)(?:\/(test|rotate-secret|deliveries))?$/.exec(pathname);
  return m ? { name: 'webhook', id: m[1]!, action: (m[2] as 'test') ?? null } : null;
}

/** The methods a webhook route takes, as its 405 and a browser's preflight (decision 105) name them. */
export const webhookMethods = (r: WebhookRoute): readonly string[] =>
  METHODS[r.name === 'webhooks' ? 'webhooks' : (r.action ?? 'webhook')]!;

/** Refuses a method the route does not take, naming those it does. */
export function webhookMethod(r: WebhookRoute, method: string): void {
  const allowed = webhookMethods(r);
  if (!allowed.includes(method))
    throw new Refusal(
      'method_not_allowed',
      `${method.slice(0, 16)} is not allowed here; use ${allowed.length > 1 ? `${allowed.slice(0, -1).join(', ')} or ${allowed.at(-1)}` : allowed[0]}`,
      {
        Allow: allowed.join(', '),
      },
    );
}

const encoder = new TextEncoder();
/** A webhook answer: the envelope every answer has, no reading in it, never cached. */
const answer = (status: number, data: unknown, headers: Record<string, string>): ShimResponse =>
  data === null
    ? { status, headers: { 'Cache-Control': 'no-store', ...headers }, body: null, code: null }
    : uncachedJson(status, { as_of: null, model_version: null, disclaimer: DISCLAIMER, data }, headers);

/** An endpoint as its owner sees it: never its secrets, its owner or its message in flight. */
function view(e: EndpointRecord, feed: Feed | null, plan: Plan) {
  return {
    id: e.id,
    url: e.url,
    fields: e.fields,
    symbols: e.symbols,
    universes: e.universes,
    description: e.description,
    enabled: e.enabled,
    disabled_reason: e.disabled_reason,
    created_at: e.created_at,
    delivered_through: e.delivered_through,
    pending: feed ? pendingMessages(feed, e, plan, e.delivered_through) : 0,
  };
}

/** The request's JSON body, at most WEBHOOK_BODY_MAX bytes. */
async function jsonBody(request: ShimRequest): Promise<unknown> {
  const declared = Number(request.headers.get('content-length') ?? 0);
  const tooLarge = new Refusal('bad_parameter', `The request body is larger than ${WEBHOOK_BODY_MAX / 1024} KB`);
  if (declared > WEBHOOK_BODY_MAX) throw tooLarge;
  const text = (await request.text?.()) ?? '';
  if (encoder.encode(text).byteLength > WEBHOOK_BODY_MAX) throw tooLarge;
  try {
    return JSON.parse(text);
  } catch {
    throw new Refusal('bad_parameter', 'The request body must be JSON (Content-Type: application/json)');
  }
}

const randomHex = (bytes: number) =>
  [...crypto.getRandomValues(new Uint8Array(bytes))].map((b) => b.toString(16).padStart(2, '0')).join('');

/**
 * Adds `e`, or, where the store failed without saying whether it did (a Redis that timed out may run the write when it
 * wakes), removes it again before the failure is answered: a caller told to retry never leaves behind an endpoint whose
 * secret it was never given. The removal goes after the add on the store's one connection, so it runs after it.
 */
async function addOrUndo(store: WebhookStore, e: EndpointRecord, max: number): Promise<boolean> {
  try {
    return await store.add(e, max);
  } catch (failure) {
    // Where the removal fails too, the endpoint may stay: the failure logged (its class kept) names it.
    await store.remove(e.id).catch((undo: unknown) => {
      if (failure instanceof Error)
        failure.message += `; endpoint ${e.id} may have been stored, and its removal failed too (${(undo as Error)?.message ?? undo})`;
    });
    throw failure;
  }
}

/** Answers a webhook route for an admitted caller; `feed` is the published change feed with its catalogue. */
export async function webhookResponse(
  w: WebhookOptions,
  r: WebhookRoute,
  request: ShimRequest,
  caller: Caller,
  owner: string,
  feed: Feed | null,
  now: number,
  headers: Record<string, string>,
): Promise<ShimResponse> {
  const { store } = w;
  const plan = caller.plan;
  const read = (body: unknown, kind: 'create' | 'change') => {
    try {
      const b = readEndpointBody(body, kind as 'change', feed?.symbols ?? new Set());
      const bad = b.url === undefined ? null : urlProblem(b.url, w.policy);
      if (bad) throw new Refusal('bad_parameter', `url: ${bad}`);
      return b;
    } catch (e) {
      throw e instanceof BodyProblem ? new Refusal('bad_parameter', e.message) : e;
    }
  };
  if (r.name === 'webhooks') {
    if (request.method !== 'POST') {
      const endpoints = (await store.list(owner)).map((e) => view(e, feed, plan));
      return answer(200, { endpoints, max_endpoints: WEBHOOK_ENDPOINTS[plan] }, headers);
    }
    const settings = read(await jsonBody(request), 'create') as Required<ReturnType<typeof read>>;
    const secret = newSecret();
    const e: EndpointRecord = {
      ...settings,
      id: `ep_${randomHex(12)}`,
      owner,
      plan,
      enabled: true,
      disabled_reason: null,
      created_at: new Date(now).toISOString(),
      secrets: [{ key: secret, until: null }],
      // A new endpoint starts at the end of the feed: the refreshes before it are in /v1/changes.
      delivered_through: feed?.ledger.events.length ?? 0,
      pending: null,
    };
    if (!(await addOrUndo(store, e, WEBHOOK_ENDPOINTS[plan])))
      throw new Refusal(
        'plan_required',
        `The ${plan} plan holds at most ${WEBHOOK_ENDPOINTS[plan]} webhook endpoint${WEBHOOK_ENDPOINTS[plan] === 1 ? '' : 's'}; delete one, or move to a plan that holds more (basic ${WEBHOOK_ENDPOINTS.basic}, pro ${WEBHOOK_ENDPOINTS.pro}, ultra ${WEBHOOK_ENDPOINTS.ultra})`,
      );
    return answer(201, { ...view(e, feed, plan), secret }, { ...headers, Location: `/v1/webhooks/${e.id}` });
  }
  const found = ID.test(r.id) ? await store.get(r.id) : null;
  if (!found || found.owner !== owner)
    throw new Refusal('not_found', `No webhook endpoint ${r.id.slice(0, 40)} of yours; GET /v1/webhooks lists them`);
  let e = found;
  // A marketplace owner's plan is known only from its calls: kept for the deliverer's visibility rule.
  if (e.plan !== plan) await store.set(e.id, { plan });
  const gone = () => new Refusal('not_found', `Webhook endpoint ${e.id} was deleted meanwhile`);
  switch (r.action) {
    case null:
      if (request.method === 'DELETE') return (await store.remove(e.id), answer(204, null, headers));
      if (request.method === 'PATCH') {
        const change = read(await jsonBody(request), 'change');
        const { enabled, ...settings } = change;
        const fields: EndpointFields = { ...settings };
        if (enabled === true && !e.enabled) Object.assign(fields, enabledAgain(e, now));
        else if (enabled === false && e.enabled) Object.assign(fields, disabledBy('its owner', now));
        if (!(await store.set(e.id, fields))) throw gone();
        e = { ...e, ...fields };
      }
      return answer(200, view(e, feed, plan), headers);
    case 'rotate-secret': {
      const secret = newSecret();
      const kept = e.secrets
        .filter((s) => s.until === null || s.until > now)
        .map((s) => ({ key: s.key, until: s.until ?? now + WEBHOOK_OLD_SECRET_MS }));
      if (!(await store.set(e.id, { secrets: [{ key: secret, until: null }, ...kept] }))) throw gone();
      return answer(
        200,
        { ...view(e, feed, plan), secret, previous_secret_expires_at: new Date(now + WEBHOOK_OLD_SECRET_MS).toISOString() },
        headers,
      );
    }
    case 'deliveries':
      return answer(200, { endpoint_id: e.id, deliveries: await store.attempts(e.id) }, headers);
    case 'test': {
      const id = `msg_${e.id}_test_${now}`;
      const body = testMessage(e.id, now);
      const res = await w.send(e.url, signedHeaders(id, body, e.secrets, now), body);
      const attempt = attemptOf(id, 1, now, res);
      await store.logAttempt(e.id, attempt);
      return answer(200, attempt, headers);
    }
  }
}
