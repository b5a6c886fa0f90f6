/**
 * What every webhook store must do (decision 108), run against each (memory, SQLite, Redis): endpoints listed
 * oldest first, an owner's limit that two creates at once cannot both pass, writes of some fields that leave the
 * others alone, a remove that takes the attempts with it, the attempts log's length and order, and a claim held by
 * one holder at a time that lapses. Claims are given a `now` that advances (stores in one process go by it) and
 * are waited for too (Redis goes by its own clock), so the same test holds for both.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { WEBHOOK_ATTEMPTS_KEPT } from '../../../generator/contract/webhooks.js';
import type { Attempt, EndpointRecord, WebhookStore } from '../../../auth-shim/webhooks/store.js';
import { sampleEndpoint } from './endpoint.js';

export interface OpenedStore {
  store: WebhookStore;
  close(): Promise<void>;
}

/** A full record, every kind of field set (lists, nulls, a nested message, numbers), so a round trip shows them all. */
export function endpoint(
  owner: string,
  created_at = '2026-01-01T00:00:00.000Z',
  id = `ep_${randomBytes(8).toString('hex')}`,
): EndpointRecord {
  return sampleEndpoint({
    id,
    owner,
    created_at,
    url: `https://example.com/hooks/${id}`,
    fields: ['risk_score', 'stale_models'],
    symbols: ['BTC', 'ETH'],
    secrets: [
      { key: 'whsec_bmV3', until: null },
      { key: 'whsec_b2xk', until: 1_767_225_600_000 },
    ],
  });
}

const attempt = (n: number): Attempt => ({
  message_id: `msg_${n}`,
  attempt: n,
  at: new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString(),
  status: n % 2 ? 500 : null,
  error: n % 2 ? null : 'connection refused',
  ms: 100 + n,
});

/** Polls `check` until it is true or `ms` pass; its last answer. */
async function until(check: () => Promise<boolean>, ms: number, every = 25): Promise<boolean> {
  const end = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, every));
  }
}

export function describeWebhookStore(name: string, make: () => Promise<OpenedStore>): void {
  describe(`webhook store: ${name}`, () => {
    const opened: OpenedStore[] = [];
    afterEach(async () => {
      for (const o of opened.splice(0)) await o.close();
    });
    /** A new, empty store for one test. */
    const open = async (): Promise<WebhookStore> => {
      const o = await make();
      opened.push(o);
      return o.store;
    };

    it('gives back what was added, and lists an owner’s endpoints or all of them oldest first', async () => {
      const s = await open();
      // Added out of age order, two of the same age (then ordered by id).
      const c = endpoint('label:a', '2026-03-01T00:00:00.000Z', 'ep_c');
      const a = endpoint('label:a', '2026-01-01T00:00:00.000Z', 'ep_a');
      const x = endpoint('label:b', '2026-02-01T00:00:00.000Z', 'ep_x');
      const b = endpoint('label:a', '2026-01-01T00:00:00.000Z', 'ep_b');
      for (const e of [c, b, x, a]) expect(await s.add(e, 5)).toBe(true);

      expect(await s.get('ep_x')).toEqual(x);
      expect(await s.get('ep_missing')).toBeNull();
      expect((await s.list('label:a')).map((e) => e.id)).toEqual(['ep_a', 'ep_b', 'ep_c']);
      expect(await s.list('label:b')).toEqual([x]);
      expect(await s.list('label:nobody')).toEqual([]);
      expect(await s.list()).toEqual([a, b, x, c]);
    });

    it('refuses an owner’s endpoint past the limit, and only that owner’s', async () => {
      const s = await open();
      expect(await s.add(endpoint('label:a'), 2)).toBe(true);
      expect(await s.add(endpoint('label:a'), 2)).toBe(true);
      const refused = endpoint('label:a');
      expect(await s.add(refused, 2)).toBe(false);
      expect(await s.get(refused.id)).toBeNull();
      expect(await s.add(endpoint('label:b'), 2)).toBe(true);
      expect(await s.list('label:a')).toHaveLength(2);
      expect(await s.list()).toHaveLength(3);
    });

    it('lets exactly the limit through when creates come at once', async () => {
      const s = await open();
      const added = await Promise.all(Array.from({ length: 10 }, () => s.add(endpoint('label:a'), 5)));
      expect(added.filter(Boolean)).toHaveLength(5);
      expect(await s.list('label:a')).toHaveLength(5);
      expect(await s.list()).toHaveLength(5);
    });

    it('writes only the fields given: a customer’s change and the deliverer’s progress at once keep both', async () => {
      const s = await open();
      const e = endpoint('label:a');
      await s.add(e, 5);
      const pending = { id: 'msg_1', body: '{"events":[]}', to: 7, attempt: 1, next_at: 1_767_225_605_000 };
      const [byCustomer, byDeliverer] = await Promise.all([
        s.set(e.id, { url: 'https://example.com/changed', description: 'mine' }),
        s.set(e.id, { pending }),
      ]);
      expect([byCustomer, byDeliverer]).toEqual([true, true]);
      expect(await s.get(e.id)).toEqual({ ...e, url: 'https://example.com/changed', description: 'mine', pending });

      expect(await s.set(e.id, { pending: null, delivered_through: 7, enabled: false, disabled_reason: 'gone' })).toBe(true);
      expect(await s.get(e.id)).toEqual({
        ...e,
        url: 'https://example.com/changed',
        description: 'mine',
        delivered_through: 7,
        enabled: false,
        disabled_reason: 'gone',
      });
      expect(await s.list('label:a')).toHaveLength(1);
    });

    it('writes nothing, and says so, to an endpoint that is not there (or no longer)', async () => {
      const s = await open();
      expect(await s.set('ep_missing', { url: 'https://example.com/x' })).toBe(false);
      expect(await s.get('ep_missing')).toBeNull();

      const e = endpoint('label:a');
      await s.add(e, 5);
      expect(await s.remove(e.id)).toBe(true);
      expect(await s.set(e.id, { pending: null, delivered_through: 3 })).toBe(false);
      expect(await s.get(e.id)).toBeNull();
      expect(await s.list()).toEqual([]);
    });

    it('removes an endpoint with its attempts, frees its place, and says false the second time', async () => {
      const s = await open();
      const e = endpoint('label:a');
      const other = endpoint('label:a');
      await s.add(e, 2);
      await s.add(other, 2);
      await s.logAttempt(e.id, attempt(1));
      await s.logAttempt(other.id, attempt(2));

      expect(await s.remove(e.id)).toBe(true);
      expect(await s.get(e.id)).toBeNull();
      expect(await s.attempts(e.id)).toEqual([]);
      expect(await s.list('label:a')).toEqual([other]);
      expect(await s.list()).toEqual([other]);
      expect(await s.attempts(other.id)).toEqual([attempt(2)]);
      expect(await s.remove(e.id)).toBe(false);
      // Its place is free again.
      expect(await s.add(endpoint('label:a'), 2)).toBe(true);
    });

    it(`keeps the newest ${WEBHOOK_ATTEMPTS_KEPT} attempts, newest first`, async () => {
      const s = await open();
      const e = endpoint('label:a');
      const other = endpoint('label:a');
      await s.add(e, 5);
      await s.add(other, 5);
      expect(await s.attempts(e.id)).toEqual([]);
      const n = WEBHOOK_ATTEMPTS_KEPT + 5;
      for (let i = 1; i <= n; i++) await s.logAttempt(e.id, attempt(i));
      await s.logAttempt(other.id, attempt(0));

      const log = await s.attempts(e.id);
      expect(log).toHaveLength(WEBHOOK_ATTEMPTS_KEPT);
      expect(log[0]).toEqual(attempt(n));
      expect(log.at(-1)).toEqual(attempt(n - WEBHOOK_ATTEMPTS_KEPT + 1));
      expect(log.map((a) => a.attempt)).toEqual(Array.from({ length: WEBHOOK_ATTEMPTS_KEPT }, (_, i) => n - i));
      expect(await s.attempts(other.id)).toEqual([attempt(0)]);
    });

    it('gives a claim to one holder at a time, per endpoint', async () => {
      const s = await open();
      const now = 1_767_225_600_000;
      expect(await s.claim('ep_1', 'a', 60_000, now)).toBe(true);
      expect(await s.claim('ep_1', 'b', 60_000, now + 1)).toBe(false);
      expect(await s.claim('ep_2', 'b', 60_000, now + 1)).toBe(true);
      expect(await s.claim('ep_2', 'a', 60_000, now + 2)).toBe(false);
    });

    it('renews a claim for the holder that has it', async () => {
      const s = await open();
      const now = 1_767_225_600_000;
      expect(await s.claim('ep_1', 'a', 300, now)).toBe(true);
      // Renewed for longer before it lapses; then past when the first would have lapsed, it is still held.
      expect(await s.claim('ep_1', 'a', 60_000, now + 200)).toBe(true);
      await new Promise((r) => setTimeout(r, 400));
      expect(await s.claim('ep_1', 'b', 60_000, now + 400)).toBe(false);
      expect(await s.claim('ep_1', 'a', 60_000, now + 400)).toBe(true);
    });

    it('lets a claim lapse after its time, and another holder take over', async () => {
      const s = await open();
      const now = 1_767_225_600_000;
      const ms = 200;
      expect(await s.claim('ep_1', 'a', ms, now)).toBe(true);
      // Past the claim's time by the store's clock: `now` for a store in one process, Redis's own otherwise.
      expect(await until(() => s.claim('ep_1', 'b', 60_000, now + ms + 1), 5_000)).toBe(true);
      expect(await s.claim('ep_1', 'a', ms, now + ms + 2)).toBe(false);
    });

    it('releases a claim only for its holder', async () => {
      const s = await open();
      const now = 1_767_225_600_000;
      await s.release('ep_1', 'a'); // nothing held: nothing happens
      expect(await s.claim('ep_1', 'a', 60_000, now)).toBe(true);
      await s.release('ep_1', 'b');
      expect(await s.claim('ep_1', 'b', 60_000, now + 1)).toBe(false);
      await s.release('ep_1', 'a');
      expect(await s.claim('ep_1', 'b', 60_000, now + 2)).toBe(true);
      expect(await s.claim('ep_1', 'a', 60_000, now + 3)).toBe(false);
    });
  });
}
