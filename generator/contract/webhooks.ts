/**
 * Push (decision 108): what a webhook endpoint is, what a customer may ask of one, and the terms every store and
 * runtime shares (plan limits, the retry schedule, a message's size). Runtime-neutral: the Node server and the edge
 * read requests with these rules, and the OpenAPI document describes the same shapes (contract/shapes.ts).
 */
import { CHANGE_FIELDS, UNIVERSES } from './constants.js';
import type { Plan } from './plans.js';

/** The endpoints a plan holds at most (decision 108). */
export const WEBHOOK_ENDPOINTS: Record<Plan, number> = { basic: 1, pro: 5, ultra: 25 };
/** The most events one message carries; a refresh with more for an endpoint is sent as several, in feed order. */
export const WEBHOOK_MESSAGE_EVENTS = 100;
/** The most a request body to a webhook route may be, in bytes. */
export const WEBHOOK_BODY_MAX = 16 * 1024;
/** The longest URL an endpoint may have. */
export const WEBHOOK_URL_MAX = 2_048;
/** The longest description. */
export const WEBHOOK_DESCRIPTION_MAX = 256;
/** The most entries one filter list may hold. */
export const WEBHOOK_FILTER_MAX = 200;
/** The recent attempts an endpoint's log keeps. */
export const WEBHOOK_ATTEMPTS_KEPT = 100;
/** How long a rotated secret still signs beside the new one. */
export const WEBHOOK_OLD_SECRET_MS = 24 * 3600_000;
/** An attempt that has no 2xx answer within this is failed (and retried). */
export const WEBHOOK_TIMEOUT_MS = 10_000;
/** The longest an attempt is noted to take: it is cut at WEBHOOK_TIMEOUT_MS, and a stalled process notes more. */
export const WEBHOOK_ATTEMPT_MS_MAX = 600_000;
/** The most of an answer an attempt reads. */
export const WEBHOOK_ANSWER_MAX = 64 * 1024;
/**
 * The waits before each retry (decision 108, after Svix's and Stripe's schedules): about three days in all, each
 * +-10% so that endpoints failed together do not retry together. After the last, the endpoint is disabled.
 */
export const WEBHOOK_RETRY_MS = [5e3, 3e5, 18e5, 72e5, 18e6, 36e6, 504e5, 72e6, 864e5] as const;
/** The most a receiver's Retry-After may defer a retry. */
export const WEBHOOK_RETRY_AFTER_MAX_MS = 864e5;

/** The field filter's names: each event field of the feed, and `stale_models` for all of its keys (decision 34). */
export const WEBHOOK_FIELDS: readonly string[] = [...CHANGE_FIELDS.filter((f) => !f.startsWith('stale_models.')), 'stale_models'];
/** The filter name an event's field passes under. */
export const filterField = (field: string): string => (field.startsWith('stale_models.') ? 'stale_models' : field);

/** What an endpoint sends to, and which events: as a customer sets them. */
export interface EndpointSettings {
  url: string;
  fields: string[];
  symbols: string[];
  universes: string[];
  description: string | null;
}

/** `POST /v1/webhooks`'s body, read: settings, every filter given or empty. */
export type EndpointCreate = EndpointSettings;
/** `PATCH /v1/webhooks/{id}`'s body, read: only what it names. */
export type EndpointChange = Partial<EndpointSettings> & { enabled?: boolean };

/** A body's problem, naming the field: a 400 bad_parameter. */
export class BodyProblem extends Error {}

const MEMBERS = {
  create: ['url', 'fields', 'symbols', 'universes', 'description'],
  change: ['url', 'fields', 'symbols', 'universes', 'description', 'enabled'],
} as const;

/**
 * A request body's settings, checked field by field against the catalogue's symbols: throws BodyProblem naming the
 * first field that is wrong. The URL's address rules are the caller's (they depend on the operator's policy).
 */
export function readEndpointBody(body: unknown, kind: 'create', symbols: ReadonlySet<string>): EndpointCreate;
export function readEndpointBody(body: unknown, kind: 'change', symbols: ReadonlySet<string>): EndpointChange;
export function readEndpointBody(body: unknown, kind: 'create' | 'change', symbols: ReadonlySet<string>): EndpointCreate | EndpointChange {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new BodyProblem('The body must be a JSON object');
  const b = body as Record<string, unknown>;
  const allowed: readonly string[] = MEMBERS[kind];
  const unknown = Object.keys(b).find((k) => !allowed.includes(k));
  if (unknown !== undefined) throw new BodyProblem(`${clip(unknown)} is not a field of this request; it takes ${allowed.join(', ')}`);
  const out: EndpointChange = {};
  if (kind === 'create' && b.url === undefined) throw new BodyProblem('url is required: the https URL to deliver to');
  if (b.url !== undefined) {
    if (typeof b.url !== 'string' || !b.url) throw new BodyProblem('url must be a string: the https URL to deliver to');
    if (characters(b.url) > WEBHOOK_URL_MAX) throw new BodyProblem(`url is longer than ${WEBHOOK_URL_MAX} characters`);
    out.url = b.url;
  }
  const exactly = (names: readonly string[]) => (x: string) => (names.includes(x) ? x : undefined);
  // A symbol in any case, as the path's (decision 11), kept as the catalogue spells it.
  const canonical = new Map([...symbols].map((s) => [s.toUpperCase(), s]));
  const filters = [
    ['fields', exactly(WEBHOOK_FIELDS), `one of ${WEBHOOK_FIELDS.join(', ')}`],
    ['symbols', (x: string) => canonical.get(x.toUpperCase()), 'a symbol of the catalogue (GET /v1/assets)'],
    ['universes', exactly(UNIVERSES), `one of ${UNIVERSES.join(', ')}`],
  ] as const;
  for (const [name, known, rule] of filters) {
    const v = b[name];
    if (v === undefined) {
      if (kind === 'create') out[name] = [];
      continue;
    }
    if (!Array.isArray(v) || v.length > WEBHOOK_FILTER_MAX)
      throw new BodyProblem(`${name} must be a list of at most ${WEBHOOK_FILTER_MAX} names (empty or absent: every one)`);
    const named = v.map((x: unknown) => (typeof x === 'string' ? known(x) : undefined));
    const bad = named.indexOf(undefined);
    if (bad >= 0) throw new BodyProblem(`${name}: ${clip(JSON.stringify(v[bad]))} is not ${rule}`);
    out[name] = [...new Set(named as string[])].sort();
  }
  if (b.description !== undefined) {
    if (b.description !== null && (typeof b.description !== 'string' || characters(b.description) > WEBHOOK_DESCRIPTION_MAX))
      throw new BodyProblem(`description must be a string of at most ${WEBHOOK_DESCRIPTION_MAX} characters, or null`);
    out.description = b.description;
  } else if (kind === 'create') out.description = null;
  if (b.enabled !== undefined) {
    if (typeof b.enabled !== 'boolean') throw new BodyProblem('enabled must be true or false');
    out.enabled = b.enabled;
  }
  return out;
}

/** A string's length as JSON Schema's maxLength counts it: in characters (code points), an emoji one. */
const characters = (s: string) => [...s].length;
const clip = (s: string) => (s.length > 60 ? `${s.slice(0, 60)}...` : s);
