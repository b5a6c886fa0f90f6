/**
 * Delivery (decision 108): each endpoint is sent its messages in feed order, the next only once the one before was
 * delivered, retried on the decision's schedule, disabled on 410 or after the last retry. Every step is written to
 * the store before the next is taken, so a process killed at any instant loses nothing: the message in flight is
 * sent again, with the same id. Runtime-neutral: the store, the feed, the sender and the clock are given.
 */
import type { Plan } from '../../generator/contract/plans.js';
import { WEBHOOK_ATTEMPT_MS_MAX, WEBHOOK_RETRY_AFTER_MAX_MS, WEBHOOK_RETRY_MS } from '../../generator/contract/webhooks.js';
import type { Feed } from './feed.js';
import { nextMessage } from './messages.js';
import { signedHeaders } from './sign.js';
import { TroubleLog } from '../trouble-log.js';
import type { Attempt, EndpointRecord, Pending, WebhookStore } from './store.js';

/** What one attempt came to. */
export interface SendResult {
  /** The answer's HTTP status; null when there was none (timeout, refused, reset, TLS, address refused). */
  status: number | null;
  /** Why the attempt failed, short and for people; null when the answer is 2xx. */
  error: string | null;
  /** How long the attempt took. */
  ms: number;
  /** The answer's Retry-After, in milliseconds from now (never negative); null when absent or unparsable. */
  retryAfterMs: number | null;
}
export type Send = (url: string, headers: Record<string, string>, body: string) => Promise<SendResult>;

/** Counted per attempt, for the metrics. */
export interface DeliveryObserver {
  attempt(outcome: 'delivered' | 'failed', lagMs: number | null): void;
}

export interface DelivererOptions {
  store: WebhookStore;
  /** The published feed, or null while there is none. */
  feed: () => Promise<Feed | null>;
  send: Send;
  /** The owner's plan now, or null when it has no key in force: its endpoints then wait. */
  planOf: (e: EndpointRecord) => Plan | null;
  now?: () => number;
  /** This process's name in claims (a fleet). */
  holder?: string;
  /** Endpoints delivered to at once. */
  concurrency?: number;
  log?: (m: string) => void;
  observer?: DeliveryObserver;
  /** In [0, 1): the retries' spread. */
  random?: () => number;
}

/** An attempt as the deliveries log keeps it: its time in whole milliseconds, within what the document states. */
export const attemptOf = (message_id: string, attempt: number, at: number, r: SendResult): Attempt => ({
  message_id,
  attempt,
  at: new Date(at).toISOString(),
  status: r.status,
  error: r.error,
  ms: Math.min(Math.max(0, Math.round(r.ms)), WEBHOOK_ATTEMPT_MS_MAX),
});

/** How long a claim holds: a process that stops is taken over within it. */
const CLAIM_MS = 30_000;
/** What a delivery whose store write failed during the stop leaves: its message is still pending in the store. */
const STOPPED_MID_WRITE = 'left pending for the next start, which sends it again with the same id';
/** The feeds seen, to tell how long after a refresh was noticed its first attempt was made. */
const SEEN_KEPT = 64;

export class Deliverer {
  private readonly busy = new Set<string>();
  private readonly working = new Set<Promise<void>>();
  private readonly now: () => number;
  private readonly holder: string;
  private readonly concurrency: number;
  private readonly random: () => number;
  private readonly log: (m: string) => void;
  /** [feed length, when first seen], oldest first. */
  private readonly seen: [number, number][] = [];
  private timer: ReturnType<typeof setInterval> | null = null;
  private ticking: Promise<void> | null = null;
  /** Set by stop(): no new work starts, and an endpoint's backlog waits for the next process. */
  private stopping = false;

  constructor(private readonly o: DelivererOptions) {
    this.now = o.now ?? Date.now;
    this.holder = o.holder ?? crypto.randomUUID();
    this.concurrency = o.concurrency ?? 256;
    this.random = o.random ?? Math.random;
    this.log = o.log ?? (() => {});
    this.troubles = new TroubleLog(this.log);
  }

  /** Looks for due work every `ms` until stopped. */
  start(ms = 1_000): void {
    this.timer ??= setInterval(() => void this.tick(), ms);
    (this.timer as { unref?: () => void }).unref?.();
  }

  /**
   * Stops looking for work and waits for the deliveries in flight (a drain: the backlog is the next process's). A look
   * in flight is not waited for: it starts nothing now, and it may be waiting out a stalled store's timeout.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    while (this.working.size) await Promise.all(this.working);
  }

  /** Resolves once nothing is in flight. */
  async idle(): Promise<void> {
    await this.ticking;
    while (this.working.size) await Promise.all(this.working);
  }

  /** A look that fails is said again a minute on at most, as the quotas say theirs. */
  private readonly troubles: TroubleLog<'look'>;

  /** One look: every endpoint with work due and a free slot is worked on. One look at a time. */
  tick(): Promise<void> {
    this.ticking ??= this.look()
      .then(
        () => void this.troubles.over('look'),
        (e: unknown) => {
          // A look cut short by the stop (its store closed under it) is no failure to report.
          if (this.stopping) return;
          this.troubles.say(
            'look',
            `webhooks: cannot read the endpoints (${(e as Error).message}); trying again each second, said once a minute`,
          );
        },
      )
      .finally(() => (this.ticking = null));
    return this.ticking;
  }

  private async look(): Promise<void> {
    const feed = await this.o.feed();
    if (!feed) return;
    const length = feed.ledger.events.length;
    if (this.seen.at(-1)?.[0] !== length) {
      this.seen.push([length, this.now()]);
      if (this.seen.length > SEEN_KEPT) this.seen.shift();
    }
    const now = this.now();
    for (const e of await this.o.store.list()) {
      if (this.stopping || this.busy.size >= this.concurrency) break;
      // An owner with no key in force is sent nothing: not even claimed, so a fleet spends no round trip on it.
      if (this.busy.has(e.id) || !e.enabled || !this.o.planOf(e)) continue;
      if (e.pending ? e.pending.next_at > now : e.delivered_through >= length) continue;
      this.busy.add(e.id);
      const work = this.deliver(e.id, feed)
        .catch((err: unknown) =>
          this.log(`webhooks: ${e.id}: ${(err as Error).message}; ${this.stopping ? STOPPED_MID_WRITE : 'trying again'}`),
        )
        .finally(() => {
          this.busy.delete(e.id);
          this.working.delete(work);
        });
      this.working.add(work);
    }
  }

  /** Sends an endpoint what is due, in order, while it is delivered and this process holds the endpoint. */
  private async deliver(id: string, feed: Feed): Promise<void> {
    const { store } = this.o;
    if (!(await store.claim(id, this.holder, CLAIM_MS, this.now()))) return;
    try {
      while (!this.stopping) {
        const e = await store.get(id);
        if (!e?.enabled) return;
        const plan = this.o.planOf(e);
        if (!plan) return;
        let pending = e.pending;
        if (!pending) {
          const { message, through } = nextMessage(feed, e, plan, e.delivered_through);
          if (!message) return void (through > e.delivered_through && (await store.set(id, { delivered_through: through })));
          pending = { id: message.id, body: message.body, to: message.to, attempt: 0, next_at: this.now() };
          // Fixed before it is sent: every retry sends these bytes, whatever the filters become meanwhile.
          if (!(await store.set(id, { pending }))) return;
        }
        if (pending.next_at > this.now()) return;
        if (!(await this.attempt(e, pending))) return;
        if (!(await store.claim(id, this.holder, CLAIM_MS, this.now()))) return;
      }
    } finally {
      await store.release(id, this.holder);
    }
  }

  /** One attempt at the pending message; true when it was delivered. */
  private async attempt(e: EndpointRecord, p: Pending): Promise<boolean> {
    const { store } = this.o;
    const at = this.now();
    const r = await this.o.send(e.url, signedHeaders(p.id, p.body, e.secrets, at), p.body);
    const attempt = p.attempt + 1;
    const ok = r.status !== null && r.status >= 200 && r.status < 300;
    await store.logAttempt(e.id, attemptOf(p.id, attempt, at, r));
    this.o.observer?.attempt(ok ? 'delivered' : 'failed', attempt === 1 ? this.lag(p.to, at) : null);
    if (ok) return store.set(e.id, { delivered_through: p.to, pending: null });
    const failed = { ...p, attempt };
    const when = new Date(at).toISOString();
    if (r.status === 410) {
      await store.set(e.id, { enabled: false, disabled_reason: `the endpoint answered 410 Gone at ${when}`, pending: failed });
    } else if (attempt > WEBHOOK_RETRY_MS.length) {
      const why = `no 2xx answer after ${attempt} attempts over three days; the last, at ${when}: ${r.error ?? r.status}`;
      await store.set(e.id, { enabled: false, disabled_reason: why, pending: failed });
    } else {
      const wait = WEBHOOK_RETRY_MS[attempt - 1]! * (0.9 + 0.2 * this.random());
      const asked = Math.min(r.retryAfterMs ?? 0, WEBHOOK_RETRY_AFTER_MAX_MS);
      await store.set(e.id, { pending: { ...failed, next_at: at + Math.max(wait, asked) } });
    }
    return false;
  }

  /** How long after this process first saw a feed holding position `to` an attempt at it was made. */
  private lag(to: number, at: number): number | null {
    const first = this.seen.find(([length]) => length >= to);
    return first ? at - first[1] : null;
  }
}
