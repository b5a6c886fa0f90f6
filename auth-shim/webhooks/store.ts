/**
 * Where webhook endpoints and their delivery state live (decision 108): one record per endpoint, written a field at
 * a time so that a customer's change and the deliverer's progress never overwrite each other, the recent attempts,
 * and a claim that lets one process of a fleet deliver to an endpoint at a time. The Node server keeps them in its
 * SQLite database, a fleet in Redis, a process alone in memory (this file). Runtime-neutral.
 */
import { WEBHOOK_ATTEMPTS_KEPT, type EndpointSettings } from '../../generator/contract/webhooks.js';
import type { Plan } from '../../generator/contract/plans.js';

/** A signing secret (`whsec_` and base64): `until` is when a rotated one stops signing; null for the current one. */
export interface Secret {
  key: string;
  until: number | null;
}

/** The message an endpoint is being sent, fixed at its first attempt so that every retry sends the same bytes. */
export interface Pending {
  id: string;
  body: string;
  /** The feed position the message covers up to: `delivered_through` once it is delivered. */
  to: number;
  /** Attempts made so far. */
  attempt: number;
  /** When the next attempt is due (ms). */
  next_at: number;
}

export interface EndpointRecord extends EndpointSettings {
  id: string;
  /** Whose it is: `label:<key label>`, `key:<sha256>` for a key without a label, or `marketplace:<user>`. */
  owner: string;
  /** The owner's plan when it last called; the deliverer reads a direct key's plan from the key file. */
  plan: Plan;
  enabled: boolean;
  disabled_reason: string | null;
  created_at: string;
  secrets: Secret[];
  /** The feed position (counted from 1) the endpoint has received up to. */
  delivered_through: number;
  pending: Pending | null;
}

/** What the deliverer and a customer may change of an endpoint. */
export type EndpointFields = Partial<Omit<EndpointRecord, 'id' | 'owner' | 'created_at'>>;

/** An endpoint enabled again (by its owner or the operator): its first message not delivered is tried at once, its schedule begun again. */
export const enabledAgain = (e: EndpointRecord, now: number): EndpointFields => ({
  enabled: true,
  disabled_reason: null,
  pending: e.pending && { ...e.pending, attempt: 0, next_at: now },
});

/** An endpoint disabled by hand, saying by whom and when. */
export const disabledBy = (who: string, now: number, why?: string): EndpointFields => ({
  enabled: false,
  disabled_reason: `disabled by ${who} at ${new Date(now).toISOString()}${why ? `: ${why}` : ''}`,
});

/** An endpoint as the operator sees it (`risk-readings webhooks list`): everything but its secrets and the message's bytes. */
export const operatorView = (e: EndpointRecord) => ({
  id: e.id,
  owner: e.owner,
  plan: e.plan,
  url: e.url,
  enabled: e.enabled,
  disabled_reason: e.disabled_reason,
  created_at: e.created_at,
  delivered_through: e.delivered_through,
  in_flight: e.pending && { message_id: e.pending.id, attempt: e.pending.attempt, next_at: new Date(e.pending.next_at).toISOString() },
  filters: { fields: e.fields, symbols: e.symbols, universes: e.universes },
});
export type OperatorView = ReturnType<typeof operatorView>;

/** The operator's switch: an endpoint disabled (saying why) or enabled again; false when there is no such endpoint. */
export async function switchEndpoint(store: WebhookStore, id: string, enable: boolean, now: number, reason?: string): Promise<boolean> {
  const e = await store.get(id);
  return e !== null && store.set(id, enable ? enabledAgain(e, now) : disabledBy('the operator', now, reason));
}

/** One attempt to deliver a message, as `GET /v1/webhooks/{id}/deliveries` lists it. */
export interface Attempt {
  message_id: string;
  attempt: number;
  at: string;
  status: number | null;
  error: string | null;
  ms: number;
}

export interface WebhookStore {
  /** An owner's endpoints, or every endpoint, oldest first. */
  list(owner?: string): Promise<EndpointRecord[]>;
  get(id: string): Promise<EndpointRecord | null>;
  /** Adds an endpoint unless its owner already holds `max`: false then. */
  add(e: EndpointRecord, max: number): Promise<boolean>;
  /** Writes the fields given, leaving the others as they are: false when the endpoint is gone. */
  set(id: string, fields: EndpointFields): Promise<boolean>;
  /** Removes an endpoint with its attempts: false when it was not there. */
  remove(id: string): Promise<boolean>;
  /** Records an attempt, keeping the last WEBHOOK_ATTEMPTS_KEPT. */
  logAttempt(id: string, a: Attempt): Promise<void>;
  /** The recent attempts, newest first. */
  attempts(id: string): Promise<Attempt[]>;
  /**
   * The right to deliver to an endpoint for the next `ms`, held by one process at a time: true when `holder` has it
   * (taken or renewed). A holder that stops lets it lapse, and another takes over.
   */
  claim(id: string, holder: string, ms: number, now: number): Promise<boolean>;
  release(id: string, holder: string): Promise<void>;
}

/** For one process alone (`--quotas memory`, the tests): nothing outlives it. */
export class MemoryWebhookStore implements WebhookStore {
  private readonly endpoints = new Map<string, EndpointRecord>();
  private readonly logs = new Map<string, Attempt[]>();
  private readonly claims = new LocalClaims();

  list(owner?: string): Promise<EndpointRecord[]> {
    const all = [...this.endpoints.values()].filter((e) => owner === undefined || e.owner === owner);
    // Oldest first, as SQLite's ORDER BY compares: by code unit, not by locale.
    const key = (e: EndpointRecord) => `${e.created_at} ${e.id}`;
    return Promise.resolve(all.map(copy).sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0)));
  }
  get(id: string): Promise<EndpointRecord | null> {
    const e = this.endpoints.get(id);
    return Promise.resolve(e ? copy(e) : null);
  }
  add(e: EndpointRecord, max: number): Promise<boolean> {
    const held = [...this.endpoints.values()].filter((x) => x.owner === e.owner).length;
    if (held >= max) return Promise.resolve(false);
    this.endpoints.set(e.id, copy(e));
    return Promise.resolve(true);
  }
  set(id: string, fields: EndpointFields): Promise<boolean> {
    const e = this.endpoints.get(id);
    if (e) Object.assign(e, structuredClone(fields));
    return Promise.resolve(e !== undefined);
  }
  remove(id: string): Promise<boolean> {
    this.logs.delete(id);
    return Promise.resolve(this.endpoints.delete(id));
  }
  logAttempt(id: string, a: Attempt): Promise<void> {
    const log = this.logs.get(id) ?? [];
    log.unshift(a);
    this.logs.set(id, log.slice(0, WEBHOOK_ATTEMPTS_KEPT));
    return Promise.resolve();
  }
  attempts(id: string): Promise<Attempt[]> {
    return Promise.resolve([...(this.logs.get(id) ?? [])]);
  }
  claim(id: string, holder: string, ms: number, now: number): Promise<boolean> {
    return Promise.resolve(this.claims.claim(id, holder, ms, now));
  }
  release(id: string, holder: string): Promise<void> {
    return Promise.resolve(this.claims.release(id, holder));
  }
}

/** Claims within one process: for a store only one process delivers from (memory, the Node server's database). */
export class LocalClaims {
  private readonly held = new Map<string, { holder: string; until: number }>();
  claim(id: string, holder: string, ms: number, now: number): boolean {
    const c = this.held.get(id);
    if (c && c.holder !== holder && c.until > now) return false;
    this.held.set(id, { holder, until: now + ms });
    return true;
  }
  release(id: string, holder: string): void {
    if (this.held.get(id)?.holder === holder) this.held.delete(id);
  }
}

const copy = (e: EndpointRecord): EndpointRecord => structuredClone(e);
