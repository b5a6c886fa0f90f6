/**
 * Webhooks at the edge (decision 108): a Durable Object per endpoint (`WebhookEndpoint`, bound as `WEBHOOKS`, by
 * `idFromName(endpoint id)`) holds its record and its recent attempts, and delivers to it on its own alarm; a Durable
 * Object per owner (`WebhookOwner`, bound as `WEBHOOK_OWNERS`, by `idFromName(owner)`) lists that owner's endpoint
 * ids, so the plan's limit is counted and the endpoint admitted in one request to one single-threaded object (the
 * count-and-add is atomic), and one more of that class, named `*`, lists every endpoint. The worker's request path
 * reaches them through `DurableWebhookStore`, the core WebhookStore over fetch-based calls to the objects.
 *
 * Delivery is the core Deliverer's (ordering, the retry schedule, 410, disabling after the last retry), run by the
 * endpoint's object on its alarm over a view of its own storage: a store whose list() is this one endpoint and whose
 * claim() always holds (the object runs one event at a time, so no other deliverer exists). Each alarm reads the
 * published feed from the origin (the manifest each time, the ledger and catalogue only when their SHA-256 in it
 * changed) and the key store from KV, delivers what is due, and sets the next alarm: at the waiting message's
 * `next_at`, else `WEBHOOK_IDLE_MS` (30 s) on to look for a refresh, so a refresh's first attempt is made within a
 * minute of its publication. A disabled endpoint's alarm does nothing and is not set again; enabling the endpoint
 * (PATCH enabled: true) sets it to now. Creating an endpoint sets its first alarm.
 */
import type { Plan } from '../generator/contract/plans.js';
import { WEBHOOK_ATTEMPTS_KEPT } from '../generator/contract/webhooks.js';
import type { DurableObjectNamespaceLike } from './durable-quota.js';
import { KvKeys, type KvNamespaceLike } from './edge-keys.js';
import { edgeSend } from './edge-send.js';
import { HttpOrigin } from './http-origin.js';
import { JsonCache, type Origin } from './origin.js';
import type { AddressPolicy } from './webhooks/address.js';
import { Deliverer, type Send } from './webhooks/deliverer.js';
import { publishedFeed, type Feed } from './webhooks/feed.js';
import { ownerPlan } from './webhooks/owner.js';
import type { WebhookOptions } from './webhooks/routes.js';
import { LocalClaims, type Attempt, type EndpointFields, type EndpointRecord, type WebhookStore } from './webhooks/store.js';

/** The bindings webhooks read, the worker's and the objects' alike. */
export interface WebhookEnv {
  ORIGIN_URL: string;
  ORIGIN_TOKEN?: string;
  KEYS?: KvNamespaceLike;
  /** The endpoints' objects (`WebhookEndpoint`); without it the worker delivers no webhooks (`/v1/webhooks` is 404). */
  WEBHOOKS?: DurableObjectNamespaceLike;
  /** The owners' objects (`WebhookOwner`). */
  WEBHOOK_OWNERS?: DurableObjectNamespaceLike;
  /** `"true"` admits loopback addresses, plain http and any port: for the tests and local development, never production. */
  WEBHOOKS_ALLOW_LOOPBACK?: string;
  /** The DNS-over-HTTPS server a delivery's host is resolved with (default Cloudflare's): for the tests. */
  WEBHOOKS_DOH_URL?: string;
}

/** How long an endpoint with nothing waiting goes between two looks at the origin for a new refresh. */
const WEBHOOK_IDLE_MS = 30_000;
/** The name of the owner object that lists every endpoint (no owner is named so: they are `label:`, `key:`, `marketplace:`). */
const EVERY = '*';

const log = (m: string) => console.error(m);

/** Where webhooks may be sent from this deployment. */
const webhookPolicy = (env: WebhookEnv): AddressPolicy => ({ allowLoopback: env.WEBHOOKS_ALLOW_LOOPBACK?.trim() === 'true' });

/** The sender: edgeSend with the deployment's policy and resolver. */
function edgeSender(env: WebhookEnv): Send {
  const policy = webhookPolicy(env);
  const dohUrl = env.WEBHOOKS_DOH_URL?.trim() || undefined;
  return (url, headers, body) => edgeSend(url, headers, body, { policy, dohUrl });
}

/** The handler's webhook options, or undefined without both bindings (`/v1/webhooks` is then 404). */
export function edgeWebhooks(env: WebhookEnv): WebhookOptions | undefined {
  if (!env.WEBHOOKS || !env.WEBHOOK_OWNERS) {
    if (env.WEBHOOKS || env.WEBHOOK_OWNERS) log('webhooks: WEBHOOKS and WEBHOOK_OWNERS are bound together or not at all; webhooks are off');
    return undefined;
  }
  return { store: new DurableWebhookStore(env.WEBHOOKS, env.WEBHOOK_OWNERS), policy: webhookPolicy(env), send: edgeSender(env) };
}

/** One call to an object: a POST of JSON to `op`, its JSON answer. */
async function call<T>(ns: DurableObjectNamespaceLike, name: string, op: string, body: unknown): Promise<T> {
  const res = await ns.get(ns.idFromName(name)).fetch(`https://webhooks.internal/${op}`, { method: 'POST', body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`webhook object answered ${res.status} to ${op}`);
  return (await res.json()) as T;
}

const byAge = (a: EndpointRecord, b: EndpointRecord) =>
  a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;

/** The store the worker's request path uses: every call one request to the object concerned. */
export class DurableWebhookStore implements WebhookStore {
  constructor(
    private endpoints: DurableObjectNamespaceLike,
    private owners: DurableObjectNamespaceLike,
  ) {}

  private at = <T>(id: string, op: string, body: unknown) => call<T>(this.endpoints, id, op, body);

  async list(owner?: string): Promise<EndpointRecord[]> {
    const index = owner ?? EVERY;
    const ids = await call<string[]>(this.owners, index, 'list', null);
    const found = await Promise.all(ids.map((id) => this.get(id)));
    // An id whose endpoint is gone (a remove cut short between the endpoint and its lists) leaves the list now. An
    // endpoint is created before it is listed, so an id listed is never one whose endpoint is still to come.
    const gone = ids.filter((_, i) => !found[i]);
    await Promise.all(gone.map((id) => call(this.owners, index, 'remove', { id })));
    return found.filter((e): e is EndpointRecord => e !== null && (owner === undefined || e.owner === owner)).sort(byAge);
  }

  get(id: string): Promise<EndpointRecord | null> {
    return this.at(id, 'get', { id });
  }

  /** The endpoint is created, then counted in its owner's object (which refuses it at `max`), then listed with every endpoint. */
  async add(e: EndpointRecord, max: number): Promise<boolean> {
    if (!(await this.at<boolean>(e.id, 'create', { e }))) return false;
    let admitted = false;
    try {
      admitted = await call<boolean>(this.owners, e.owner, 'add', { id: e.id, max });
      if (admitted) await call(this.owners, EVERY, 'add', { id: e.id, max: null });
      return admitted;
    } catch (err) {
      if (admitted) await call(this.owners, e.owner, 'remove', { id: e.id }).catch(() => {});
      admitted = false;
      throw err;
    } finally {
      if (!admitted) await this.at(e.id, 'remove', { id: e.id }).catch(() => {});
    }
  }

  set(id: string, fields: EndpointFields): Promise<boolean> {
    return this.at(id, 'set', { id, fields });
  }

  async remove(id: string): Promise<boolean> {
    const owner = await this.at<string | null>(id, 'remove', { id });
    if (owner === null) return false;
    await Promise.all([call(this.owners, owner, 'remove', { id }), call(this.owners, EVERY, 'remove', { id })]);
    return true;
  }

  async logAttempt(id: string, a: Attempt): Promise<void> {
    await this.at(id, 'log', { id, attempt: a });
  }

  attempts(id: string): Promise<Attempt[]> {
    return this.at(id, 'attempts', { id });
  }

  claim(id: string, holder: string, ms: number, now: number): Promise<boolean> {
    return this.at(id, 'claim', { id, holder, ms, now });
  }

  async release(id: string, holder: string): Promise<void> {
    await this.at(id, 'release', { id, holder });
  }
}

/** The parts of a Durable Object's storage the webhook objects use. */
interface WebhookStorageLike {
  get<T>(key: string): Promise<T | undefined>;
  put<T>(key: string, value: T): Promise<void>;
  deleteAll(): Promise<void>;
  setAlarm(at: number): Promise<void>;
  deleteAlarm(): Promise<void>;
}
interface WebhookStateLike {
  storage: WebhookStorageLike;
}

/** An origin read one file at a time, so the ledger and the catalogue of one look share one read of the manifest. */
function oneAtATime(origin: Origin): Origin {
  let last: Promise<unknown> = Promise.resolve();
  return {
    get(path) {
      const read = last.then(
        () => origin.get(path),
        () => origin.get(path),
      );
      last = read.catch(() => {});
      return read;
    },
  };
}

/** What the request path asks an endpoint's object. */
type EndpointCall =
  | { op: 'create'; e: EndpointRecord }
  | { op: 'get' | 'remove' | 'attempts'; id: string }
  | { op: 'set'; id: string; fields: EndpointFields }
  | { op: 'log'; id: string; attempt: Attempt }
  | { op: 'claim'; id: string; holder: string; ms: number; now: number }
  | { op: 'release'; id: string; holder: string };

/** The Durable Object class of one endpoint (bind it as `WEBHOOKS`, class name `WebhookEndpoint`). */
export class WebhookEndpoint {
  /** The record as stored (undefined until read; null when there is none). */
  private record: EndpointRecord | null | undefined;
  private readonly claims = new LocalClaims();
  private deliverer: Deliverer | undefined;
  private keys: KvKeys | null | undefined;
  /** Enabled again while an alarm ran: the next alarm is now. */
  private wake = false;
  /** How long between looks with nothing waiting; the tests' worker shortens it. */
  protected idleMs = WEBHOOK_IDLE_MS;

  constructor(
    private state: WebhookStateLike,
    private env: WebhookEnv,
  ) {}

  async fetch(request: Request): Promise<Response> {
    const op = new URL(request.url).pathname.slice(1);
    const c = { ...((await request.json()) as object), op } as EndpointCall;
    switch (c.op) {
      case 'create':
        return Response.json(await this.create(c.e));
      case 'get': {
        const e = await this.load(c.id);
        return Response.json(e && structuredClone(e));
      }
      case 'set':
        return Response.json(await this.set(c.id, c.fields));
      case 'remove': {
        const e = await this.load(c.id);
        return Response.json(e && (await this.remove(c.id)) ? e.owner : null);
      }
      case 'log':
        return Response.json((await this.logAttempt(c.id, c.attempt), true));
      case 'attempts':
        return Response.json(await this.attempts(c.id));
      case 'claim':
        return Response.json(this.claims.claim(c.id, c.holder, c.ms, c.now));
      case 'release':
        return Response.json((this.claims.release(c.id, c.holder), true));
    }
    return new Response('not found', { status: 404 });
  }

  /** The record, when it is the endpoint `id`'s. */
  private async load(id?: string): Promise<EndpointRecord | null> {
    if (this.record === undefined) this.record = (await this.state.storage.get<EndpointRecord>('endpoint')) ?? null;
    return this.record && (id === undefined || this.record.id === id) ? this.record : null;
  }

  private async create(e: EndpointRecord): Promise<boolean> {
    if (await this.load()) return false;
    this.record = structuredClone(e);
    await this.state.storage.put('endpoint', this.record);
    await this.state.storage.setAlarm(Date.now() + this.idleMs);
    return true;
  }

  /** Writes the fields given; an endpoint enabled again is looked at now. */
  private async set(id: string, fields: EndpointFields): Promise<boolean> {
    const e = await this.load(id);
    if (!e) return false;
    const was = e.enabled;
    Object.assign(e, structuredClone(fields));
    await this.state.storage.put('endpoint', e);
    if (!was && e.enabled) {
      this.wake = true;
      await this.state.storage.setAlarm(Date.now());
    }
    return true;
  }

  private async remove(id: string): Promise<boolean> {
    if (!(await this.load(id))) return false;
    this.record = null;
    await this.state.storage.deleteAlarm();
    await this.state.storage.deleteAll();
    return true;
  }

  private async logAttempt(id: string, a: Attempt): Promise<void> {
    // An attempt that ends after its endpoint was removed is not kept (it would bring the object back).
    if (!(await this.load(id))) return;
    const log = [a, ...((await this.state.storage.get<Attempt[]>('attempts')) ?? [])].slice(0, WEBHOOK_ATTEMPTS_KEPT);
    await this.state.storage.put('attempts', log);
  }

  private async attempts(id: string): Promise<Attempt[]> {
    return (await this.load(id)) ? ((await this.state.storage.get<Attempt[]>('attempts')) ?? []) : [];
  }

  /** This object's storage as the deliverer's store: one endpoint, always claimed. */
  private view(): WebhookStore {
    return {
      list: async () => {
        const e = await this.load();
        return e ? [structuredClone(e)] : [];
      },
      get: async (id) => {
        const e = await this.load(id);
        return e && structuredClone(e);
      },
      add: () => Promise.resolve(false),
      set: (id, fields) => this.set(id, fields),
      remove: (id) => this.remove(id),
      logAttempt: (id, a) => this.logAttempt(id, a),
      attempts: (id) => this.attempts(id),
      claim: () => Promise.resolve(true),
      release: () => Promise.resolve(),
    };
  }

  /** The owner's plan now, from the key store in KV as the worker reads it (a marketplace owner's as stored). */
  private async planOf(): Promise<(e: EndpointRecord) => Plan | null> {
    this.keys ??= this.env.KEYS ? new KvKeys(this.env.KEYS, log) : null;
    let background: Promise<unknown> | undefined;
    await this.keys?.refresh(Date.now(), (work) => (background = work));
    await background;
    const keys = this.keys?.current() ?? null;
    return (e) => ownerPlan(keys, e, Date.now());
  }

  /** The published feed, read from the origin: the manifest once a look, the ledger only when it changed. */
  private feed(): () => Promise<Feed | null> {
    const ttlMs = Math.min(10_000, this.idleMs / 2);
    const origin = new HttpOrigin(this.env.ORIGIN_URL, { token: this.env.ORIGIN_TOKEN, ttlMs });
    return publishedFeed(new JsonCache(oneAtATime(origin)));
  }

  async alarm(): Promise<void> {
    const e = await this.load();
    // Removed, or disabled: nothing to do, and no alarm until it is enabled again.
    if (!e?.enabled) return;
    try {
      let plan: (e: EndpointRecord) => Plan | null = () => null;
      this.deliverer ??= new Deliverer({ store: this.view(), feed: this.feed(), send: edgeSender(this.env), planOf: (x) => plan(x), log });
      plan = await this.planOf();
      // An owner with no key in force is sent nothing: its endpoint waits without reading the origin.
      if (plan(e) === null) return;
      await this.deliverer.tick();
      await this.deliverer.idle();
    } catch (err) {
      log(`webhooks: ${e.id}: ${(err as Error).message}; looking again in ${this.idleMs / 1000} s`);
    } finally {
      await this.arm();
    }
  }

  /** The next alarm: at the waiting message's next attempt, else a look for a refresh an idle period on. */
  private async arm(): Promise<void> {
    const e = this.record;
    if (!e?.enabled) return;
    const now = Date.now();
    const due = e.pending && e.pending.next_at > now ? e.pending.next_at : now + this.idleMs;
    await this.state.storage.setAlarm(this.wake ? now : due);
    this.wake = false;
  }
}

/** The Durable Object class of one owner's endpoint ids, oldest first (bind it as `WEBHOOK_OWNERS`, class name `WebhookOwner`). */
export class WebhookOwner {
  private ids: string[] | undefined;

  constructor(private state: { storage: Pick<WebhookStorageLike, 'get' | 'put' | 'deleteAll'> }) {}

  async fetch(request: Request): Promise<Response> {
    const op = new URL(request.url).pathname;
    const body = (await request.json()) as { id: string; max: number | null } | null;
    const ids = (this.ids ??= (await this.state.storage.get<string[]>('ids')) ?? []);
    if (op === '/list') return Response.json(ids);
    if (op === '/add' && body) {
      // One request at a time: the count and the add are one step.
      if (ids.includes(body.id)) return Response.json(true);
      if (body.max !== null && ids.length >= body.max) return Response.json(false);
      ids.push(body.id);
      await this.state.storage.put('ids', ids);
      return Response.json(true);
    }
    if (op === '/remove' && body) {
      const at = ids.indexOf(body.id);
      if (at < 0) return Response.json(false);
      ids.splice(at, 1);
      if (ids.length) await this.state.storage.put('ids', ids);
      else await this.state.storage.deleteAll();
      return Response.json(true);
    }
    return new Response('not found', { status: 404 });
  }
}
