/**
 * Delivery: messages in feed order, the next only after the one before; the retry schedule, Retry-After, 410 and the
 * last retry; enabling again; every message signed so that the standardwebhooks verifier accepts it.
 */
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import type { Catalog, ChangeEvent, ChangeLedger } from '../../../generator/contract/shapes.js';
import { WEBHOOK_RETRY_AFTER_MAX_MS, WEBHOOK_RETRY_MS } from '../../../generator/contract/webhooks.js';
import { Deliverer, type SendResult } from '../../../auth-shim/webhooks/deliverer.js';
import { feedOf, type Feed } from '../../../auth-shim/webhooks/feed.js';
import type { ChangesMessage } from '../../../auth-shim/webhooks/messages.js';
import { newSecret } from '../../../auth-shim/webhooks/sign.js';
import { enabledAgain, MemoryWebhookStore, type EndpointRecord } from '../../../auth-shim/webhooks/store.js';
import { sampleEndpoint } from './endpoint.js';

const catalog = { assets: { BTC: { universes: ['crypto'] } } } as unknown as Catalog;
const refresh = (day: number, n = 1): ChangeEvent[] =>
  Array.from(
    { length: n },
    (_, i) =>
      ({
        published_at: `2026-10-${String(13 + day).padStart(2, '0')}T00:30:00Z`,
        symbol: 'BTC',
        universe: null,
        field: 'gravity.risk_level',
        from: i,
        to: i + 1,
        model: null,
        as_of: null,
      }) as unknown as ChangeEvent,
  );

interface Received {
  id: string;
  headers: Record<string, string>;
  body: string;
  at: number;
}

/** A deliverer over a memory store, a clock the test moves, and a receiver that answers what `answer` says. */
function rig(
  answer: (r: Received, n: number) => Partial<SendResult> = () => ({ status: 200 }),
  random = () => 0.5,
  planOf: (e: EndpointRecord) => EndpointRecord['plan'] | null = (e) => e.plan,
) {
  // The verifier judges a timestamp by the real clock: the test's clock starts there.
  let now = Date.now();
  const store = new MemoryWebhookStore();
  const received: Received[] = [];
  let feed: Feed = feedOf({ started_at: '2026-10-14T00:30:00Z', events: [], basic: [] } as unknown as ChangeLedger, catalog);
  const d = new Deliverer({
    store,
    feed: () => Promise.resolve(feed),
    send: (_url, headers, body) => {
      const r = { id: headers['webhook-id']!, headers, body, at: now };
      received.push(r);
      return Promise.resolve({ status: null, error: null, ms: 3, retryAfterMs: null, ...answer(r, received.length) });
    },
    planOf,
    now: () => now,
    random,
  });
  const secret = newSecret();
  const endpoint = sampleEndpoint({ id: 'ep_000000000000000000000001', secrets: [{ key: secret, until: null }] });
  return {
    store,
    received,
    secret,
    endpoint,
    publish(events: ChangeEvent[]) {
      const l = feed.ledger;
      feed = feedOf({ ...l, events: [...l.events, ...events] }, catalog);
    },
    /** One look, and the attempts it started finished. */
    async step() {
      await d.tick();
      await d.idle();
    },
    at: () => now,
    advance(ms: number) {
      now += ms;
    },
  };
}

describe('Deliverer', () => {
  it('delivers each refresh once, in feed order, signed so that the standardwebhooks verifier accepts it', async () => {
    const r = rig();
    await r.store.add(r.endpoint, 5);
    r.publish([...refresh(1, 2), ...refresh(2, 1)]);
    await r.step();
    expect(r.received.map((m) => m.id)).toEqual(['msg_ep_000000000000000000000001_2', 'msg_ep_000000000000000000000001_3']);
    const verifier = new Webhook(r.secret);
    for (const m of r.received) expect(verifier.verify(m.body, m.headers)).toMatchObject({ type: 'changes.published' });
    expect((await r.store.get(r.endpoint.id))!).toMatchObject({ delivered_through: 3, pending: null });
    await r.step();
    expect(r.received).toHaveLength(2);
    // Tampered, late or signed with another secret: the verifier refuses each.
    const m = r.received[0]!;
    expect(() => verifier.verify(m.body.replace('"to":1', '"to":9'), m.headers)).toThrow();
    expect(() => verifier.verify(m.body, { ...m.headers, 'webhook-timestamp': String(Math.floor(r.at() / 1000) - 600) })).toThrow();
    expect(() => new Webhook(newSecret()).verify(m.body, m.headers)).toThrow();
  });

  it('holds the next message until the one before is delivered, and retries on the schedule with the same id', async () => {
    const r = rig(
      (_m, n) => ({ status: n <= 3 ? 500 : 200, error: n <= 3 ? 'HTTP 500' : null }),
      () => 0,
    );
    await r.store.add(r.endpoint, 5);
    r.publish([...refresh(1), ...refresh(2)]);
    await r.step();
    expect(r.received.map((m) => m.id)).toEqual(['msg_ep_000000000000000000000001_1']);
    const waits: number[] = [];
    for (let i = 0; i < 2; i++) {
      const p = (await r.store.get(r.endpoint.id))!.pending!;
      waits.push(p.next_at - r.at());
      r.advance(p.next_at - r.at() - 1);
      await r.step();
      expect(r.received).toHaveLength(i + 1); // not before its time
      r.advance(1);
      await r.step();
    }
    // random 0: each wait is 90% of the schedule's.
    expect(waits).toEqual([WEBHOOK_RETRY_MS[0] * 0.9, WEBHOOK_RETRY_MS[1] * 0.9]);
    r.advance(WEBHOOK_RETRY_MS[2]);
    await r.step();
    expect(r.received.map((m) => m.id.split('_').at(-1))).toEqual(['1', '1', '1', '1', '2']);
    const log = await r.store.attempts(r.endpoint.id);
    expect(log.map((a) => [a.message_id.split('_').at(-1), a.attempt, a.status])).toEqual([
      ['2', 1, 200],
      ['1', 4, 200],
      ['1', 3, 500],
      ['1', 2, 500],
      ['1', 1, 500],
    ]);
  });

  it("honours a receiver's Retry-After beyond the schedule's wait, up to 24 hours", async () => {
    const r = rig(
      (_m, n) => ({ status: 503, retryAfterMs: n === 1 ? 120_000 : 10 * 86_400_000 }),
      () => 1,
    );
    await r.store.add(r.endpoint, 5);
    r.publish(refresh(1));
    await r.step();
    expect((await r.store.get(r.endpoint.id))!.pending!.next_at - r.at()).toBe(120_000);
    r.advance(120_000);
    await r.step();
    expect((await r.store.get(r.endpoint.id))!.pending!.next_at - r.at()).toBe(WEBHOOK_RETRY_AFTER_MAX_MS);
  });

  /**
   * A deliverer over one endpoint and a refresh on each of `days`, whose receiver holds its answer until `answer()`;
   * the webhook ids sent in `sent`, what it logs in `said`.
   */
  async function heldAtSend(days: number[]) {
    const store = new MemoryWebhookStore();
    const e = sampleEndpoint();
    await store.add(e, 5);
    const feed = feedOf(
      { started_at: '2026-10-14T00:30:00Z', events: days.flatMap((day) => refresh(day)), basic: [] } as unknown as ChangeLedger,
      catalog,
    );
    let answer!: () => void;
    const answered = new Promise<void>((done) => (answer = done));
    const sent: string[] = [];
    const said: string[] = [];
    const d = new Deliverer({
      store,
      feed: () => Promise.resolve(feed),
      send: async (_url, headers) => {
        sent.push(headers['webhook-id']!);
        await answered;
        return { status: 200, error: null, ms: 1, retryAfterMs: null };
      },
      planOf: (x) => x.plan,
      log: (m) => said.push(m),
    });
    const looked = d.tick();
    while (!sent.length) await new Promise((t) => setTimeout(t, 1));
    return { store, e, d, sent, said, answer, looked };
  }

  it('stops after the attempt in flight when stopped: the backlog is left for the next process', async () => {
    const { store, e, d, sent, answer, looked } = await heldAtSend([1, 2, 3, 4]);
    const stopped = d.stop();
    answer();
    await Promise.all([looked, stopped]);
    expect(sent).toHaveLength(1);
    expect((await store.get(e.id))!).toMatchObject({ delivered_through: 1, pending: null });
  });

  it('a delivery whose write fails during the stop says its message is left for the next start, not tried again', async () => {
    const { store, e, d, said, answer, looked } = await heldAtSend([1]);
    // A stalled Redis: the outcome's write times out.
    store.logAttempt = () => Promise.reject(new Error('Command timed out'));
    const stopped = d.stop();
    answer();
    await Promise.all([looked, stopped]);
    expect(said).toEqual([`webhooks: ${e.id}: Command timed out; left pending for the next start, which sends it again with the same id`]);
    expect((await store.get(e.id))!.pending).not.toBeNull();
  });

  /** A deliverer over `store` with an empty feed (nothing to send), what it logs said into `said`. */
  const idleDeliverer = (store: MemoryWebhookStore, said: string[]) =>
    new Deliverer({
      store,
      feed: () =>
        Promise.resolve(feedOf({ started_at: '2026-10-14T00:30:00Z', events: [], basic: [] } as unknown as ChangeLedger, catalog)),
      send: () => Promise.reject(new Error('nothing to send')),
      planOf: (x) => x.plan,
      log: (m) => said.push(m),
    });

  it('a stop does not wait for a look stuck on its store (a stalled Redis), and that look, failing once the store is closed, says nothing', async () => {
    const said: string[] = [];
    const store = new MemoryWebhookStore();
    let closeStore!: (e: Error) => void;
    store.list = () => new Promise((_, reject) => (closeStore = reject));
    const d = idleDeliverer(store, said);
    const looking = d.tick();
    while (!closeStore) await new Promise((t) => setTimeout(t, 1));
    let stopped = false;
    void d.stop().then(() => (stopped = true));
    // Turns of the event loop, not time: before, the stop waited here until the store answered.
    for (let turn = 0; turn < 100 && !stopped; turn++) await new Promise((r) => setImmediate(r));
    expect(stopped).toBe(true);
    closeStore(new Error('Connection is closed.'));
    await looking;
    expect(said).toEqual([]);
  });

  it('a store that cannot be read is said once a minute, not at each look; again at once after it was read', async () => {
    let down = true;
    const said: string[] = [];
    const store = new MemoryWebhookStore();
    const list = store.list.bind(store);
    store.list = () => (down ? Promise.reject(new Error('Command timed out')) : list());
    const d = idleDeliverer(store, said);
    for (let i = 0; i < 5; i++) await d.tick();
    expect(said).toEqual(['webhooks: cannot read the endpoints (Command timed out); trying again each second, said once a minute']);
    down = false;
    await d.tick();
    down = true;
    await d.tick();
    expect(said).toHaveLength(2);
  });

  it('disables an endpoint at once on 410 Gone, and enabling it resumes at the message not delivered', async () => {
    let gone = true;
    const r = rig(() => (gone ? { status: 410, error: 'HTTP 410' } : { status: 204 }));
    await r.store.add(r.endpoint, 5);
    r.publish(refresh(1));
    await r.step();
    const off = (await r.store.get(r.endpoint.id))!;
    expect(off).toMatchObject({ enabled: false, delivered_through: 0 });
    expect(off.disabled_reason).toMatch(/410 Gone/);
    r.advance(86_400_000);
    r.publish(refresh(2));
    await r.step();
    expect(r.received).toHaveLength(1);
    gone = false;
    await r.store.set(r.endpoint.id, enabledAgain(off, r.at()));
    await r.step();
    expect(r.received.map((m) => m.id.split('_').at(-1))).toEqual(['1', '1', '2']);
    expect((await r.store.get(r.endpoint.id))!).toMatchObject({ enabled: true, delivered_through: 2, disabled_reason: null });
  });

  it('disables the endpoint after the last retry, about three days on, saying why', async () => {
    const r = rig(
      () => ({ status: null, error: 'connect ECONNREFUSED' }),
      () => 0.5,
    );
    await r.store.add(r.endpoint, 5);
    r.publish(refresh(1));
    const start = r.at();
    for (let i = 0; i <= WEBHOOK_RETRY_MS.length; i++) {
      const p = (await r.store.get(r.endpoint.id))!.pending;
      if (p) r.advance(p.next_at - r.at());
      await r.step();
    }
    const e = (await r.store.get(r.endpoint.id))!;
    expect(r.received).toHaveLength(WEBHOOK_RETRY_MS.length + 1);
    expect(e.enabled).toBe(false);
    expect(e.disabled_reason).toMatch(/no 2xx answer after 10 attempts.*ECONNREFUSED/);
    const days = (r.at() - start) / 86_400_000;
    expect(days).toBeGreaterThan(2.9);
    expect(days).toBeLessThan(3.3);
  });

  it('signs with a rotated secret beside the new one until its time is up', async () => {
    const r = rig();
    const old = r.secret;
    const fresh = newSecret();
    await r.store.add(
      {
        ...r.endpoint,
        secrets: [
          { key: fresh, until: null },
          { key: old, until: r.at() + 1000 },
        ],
      },
      5,
    );
    r.publish(refresh(1));
    await r.step();
    r.advance(1000);
    r.publish(refresh(2));
    await r.step();
    const [during, after] = r.received;
    expect(during!.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(new Webhook(old).verify(during!.body, during!.headers)).toBeTruthy();
    expect(new Webhook(fresh).verify(during!.body, during!.headers)).toBeTruthy();
    expect(after!.headers['webhook-signature']!.split(' ')).toHaveLength(1);
    expect(() => new Webhook(old).verify(after!.body, after!.headers)).toThrow();
  });

  it("keeps a message's bytes fixed from its first attempt, whatever the filters become", async () => {
    const r = rig((_m, n) => ({ status: n === 1 ? 500 : 200 }));
    await r.store.add(r.endpoint, 5);
    r.publish(refresh(1, 3));
    await r.step();
    await r.store.set(r.endpoint.id, { fields: ['dca.band'] });
    r.advance(10_000);
    await r.step();
    expect(r.received[1]!.body).toBe(r.received[0]!.body);
    expect((JSON.parse(r.received[1]!.body) as ChangesMessage).events).toHaveLength(3);
  });

  it('sends nothing while the owner has no key in force, and nothing to a disabled endpoint', async () => {
    let revoked = true;
    const r = rig(undefined, undefined, (e) => (revoked ? null : e.plan));
    await r.store.add(r.endpoint, 5);
    await r.store.add({ ...r.endpoint, id: 'ep_000000000000000000000002', enabled: false }, 5);
    r.publish(refresh(1));
    await r.step();
    expect(r.received).toHaveLength(0);
    revoked = false;
    await r.step();
    expect(r.received.map((m) => m.id)).toEqual(['msg_ep_000000000000000000000001_1']);
  });
});
