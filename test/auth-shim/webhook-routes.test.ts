/**
 * The webhook routes through the handler (decision 108): a customer's endpoints, managed with its credential, owned
 * by its key's label or its marketplace user, held to its plan's number, counted toward the minute only; bodies and
 * methods refused naming what is wrong; a secret shown only where it is made.
 */
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { beforeAll, describe, expect, it } from 'vitest';
import { keyStoreFromJson } from '../../generator/contract/keys.js';
import { createHandler, type ShimOptions } from '../../auth-shim/handler.js';
import { FileOrigin } from '../../auth-shim/node/file-origin.js';
import { loadKeys } from '../../auth-shim/node/server.js';
import { sha256Hex } from '../../auth-shim/sha256.js';
import type { Send } from '../../auth-shim/webhooks/deliverer.js';
import { MemoryWebhookStore, type WebhookStore } from '../../auth-shim/webhooks/store.js';
import { openQuotaStore, webhookStoreBeside } from '../../auth-shim/node/quota-stores.js';
import { tempDir } from '../helpers.js';
import { KEY, KEYS_FILE, builtTree, treeJson } from './tree.js';

const marketplace = { host: 'risk-readings.marketplace.example', secret: 'proxy-secret-for-tests' };
const viaMarketplace = (plan: string, user?: string) => ({
  'x-marketplace-key': 'any-subscriber-key',
  'x-marketplace-host': marketplace.host,
  'x-marketplace-proxy-secret': marketplace.secret,
  'x-marketplace-subscription': plan,
  ...(user ? { 'x-marketplace-user': user } : {}),
});
const key = (k: string) => ({ 'X-API-Key': k });

let origin: FileOrigin;
let feedLength = 0;
beforeAll(() => {
  origin = FileOrigin.open(builtTree(), 0);
  feedLength = treeJson(builtTree(), 'changes/ledger.json').events.length;
});

/** A handler with a store of its own; `sent` holds what its sender was given. */
function rig(extra: Partial<ShimOptions> = {}) {
  const sent: { url: string; headers: Record<string, string>; body: string }[] = [];
  const send: Send = (url, headers, body) => (
    sent.push({ url, headers, body }),
    Promise.resolve({ status: 204, error: null, ms: 2, retryAfterMs: null })
  );
  const handle = createHandler({
    origin,
    keys: loadKeys(KEYS_FILE),
    marketplace,
    webhooks: { store: new MemoryWebhookStore(), policy: { allowLoopback: false }, send },
    ...extra,
  });
  const call = async (method: string, path: string, headers: Record<string, string>, body?: unknown) => {
    const res = await handle(
      new Request(`http://shim.test${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      }),
    );
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, json: text ? JSON.parse(text) : null };
  };
  return { call, sent };
}

/** The routes over `store`, sending nothing; what the shim logs in `said`. */
function rigOver(store: WebhookStore) {
  const said: string[] = [];
  const webhooks = { store, policy: { allowLoopback: false }, send: () => Promise.reject(new Error('not sent')) };
  return { ...rig({ webhooks, log: (m) => said.push(m) }), said };
}

/** A store whose add runs, as a stalled Redis runs it when it wakes, while the caller is told it timed out. */
function addTimedOut(): MemoryWebhookStore {
  const store = new MemoryWebhookStore();
  const add = store.add.bind(store);
  store.add = async (e, max) => {
    await add(e, max);
    throw new Error('Command timed out');
  };
  return store;
}

describe('webhook routes', () => {
  it('creates an endpoint at the end of the feed, answers its secret once, and lists and reads it without one', async () => {
    const { call } = rig();
    const made = await call('POST', '/v1/webhooks', key(KEY.pro), {
      url: 'https://hooks.example.com/rr',
      symbols: ['btc', 'BTC'], // in any case, as the path's symbol (decision 11): kept once, as the catalogue spells it
      description: 'ops',
    });
    expect(made.status).toBe(201);
    const e = made.json.data;
    expect(made.headers.get('location')).toBe(`/v1/webhooks/${e.id}`);
    expect(made.headers.get('cache-control')).toBe('no-store');
    expect(e).toMatchObject({
      url: 'https://hooks.example.com/rr',
      symbols: ['BTC'],
      fields: [],
      universes: [],
      enabled: true,
      delivered_through: feedLength,
      pending: 0,
    });
    expect(e.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const listed = await call('GET', '/v1/webhooks', key(KEY.pro));
    expect(listed.json.data).toMatchObject({ max_endpoints: 5, endpoints: [{ id: e.id }] });
    const read = await call('GET', `/v1/webhooks/${e.id}`, key(KEY.pro));
    for (const r of [listed, read]) expect(r.text).not.toContain(e.secret.slice(6));
    expect(read.json.data).not.toHaveProperty('secret');
    const head = await call('HEAD', `/v1/webhooks/${e.id}`, key(KEY.pro));
    expect([head.status, head.text, head.headers.get('content-length')]).toEqual([200, '', String(read.text.length)]);
  });

  it("answers another customer's endpoint 404, and holds a plan to its number of endpoints (403 naming it)", async () => {
    const { call } = rig();
    const mine = (await call('POST', '/v1/webhooks', key(KEY.basic), { url: 'https://hooks.example.com/a' })).json.data;
    for (const method of ['GET', 'PATCH', 'DELETE']) {
      const other = await call(method, `/v1/webhooks/${mine.id}`, key(KEY.pro), method === 'PATCH' ? { enabled: false } : undefined);
      expect([other.status, other.json.error.code]).toEqual([404, 'not_found']);
    }
    expect((await call('GET', '/v1/webhooks', key(KEY.pro))).json.data.endpoints).toEqual([]);
    const second = await call('POST', '/v1/webhooks', key(KEY.basic), { url: 'https://hooks.example.com/b' });
    expect([second.status, second.json.error.code]).toEqual([403, 'plan_required']);
    expect(second.json.error.message).toMatch(/basic plan holds at most 1 webhook endpoint;.*pro 5, ultra 25/);
    expect((await call('DELETE', `/v1/webhooks/${mine.id}`, key(KEY.basic))).status).toBe(204);
    expect((await call('POST', '/v1/webhooks', key(KEY.basic), { url: 'https://hooks.example.com/b' })).status).toBe(201);
  });

  it("keeps a customer's endpoints across a key roll: they belong to the key's label", async () => {
    const [a, b] = ['rr_test_acme_old_key', 'rr_test_acme_new_key'];
    const keys = keyStoreFromJson({
      keys: [
        { sha256: await sha256Hex(a), plan: 'pro', label: 'Acme' },
        { sha256: await sha256Hex(b), plan: 'pro', label: 'Acme' },
      ],
    });
    const { call } = rig({ keys });
    const e = (await call('POST', '/v1/webhooks', key(a), { url: 'https://hooks.example.com/acme' })).json.data;
    expect((await call('GET', '/v1/webhooks', key(b))).json.data.endpoints.map((x: { id: string }) => x.id)).toEqual([e.id]);
  });

  it("gives a marketplace caller its user's endpoints, and refuses one that names no user (401)", async () => {
    const { call } = rig();
    const none = await call('GET', '/v1/webhooks', viaMarketplace('PRO'));
    expect([none.status, none.json.error.code]).toEqual([401, 'unauthorized']);
    expect(none.json.error.message).toMatch(/send x-marketplace-user/);
    const e = (await call('POST', '/v1/webhooks', viaMarketplace('PRO', 'alice'), { url: 'https://hooks.example.com/alice' })).json.data;
    expect((await call('GET', '/v1/webhooks', viaMarketplace('PRO', 'alice'))).json.data.endpoints).toHaveLength(1);
    expect((await call('GET', '/v1/webhooks', viaMarketplace('PRO', 'bob'))).json.data.endpoints).toHaveLength(0);
    expect((await call('GET', `/v1/webhooks/${e.id}`, key(KEY.pro))).status).toBe(404);
  });

  it("names a marketplace caller's user by the header set its proxy secret came in, never a header its customer added", async () => {
    const { call } = rig();
    const alice = (await call('POST', '/v1/webhooks', viaMarketplace('PRO', 'alice'), { url: 'https://hooks.example.com/alice' })).json
      .data;
    // The marketplace's own names carry the secret and its user; mallory adds the neutral name of another user.
    const mallory = {
      'x-rapidapi-key': 'any-subscriber-key',
      'x-rapidapi-host': marketplace.host,
      'x-rapidapi-proxy-secret': marketplace.secret,
      'x-rapidapi-subscription': 'PRO',
      'x-rapidapi-user': 'mallory',
      'x-marketplace-user': 'alice',
    };
    expect((await call('GET', '/v1/webhooks', mallory)).json.data.endpoints).toEqual([]);
    for (const [method, path, body] of [
      ['GET', `/v1/webhooks/${alice.id}`],
      ['PATCH', `/v1/webhooks/${alice.id}`, { url: 'https://attacker.example.com/' }],
      ['POST', `/v1/webhooks/${alice.id}/rotate-secret`],
      ['DELETE', `/v1/webhooks/${alice.id}`],
    ] as const)
      expect((await call(method, path, mallory, body)).status, `${method} ${path}`).toBe(404);
    expect((await call('GET', `/v1/webhooks/${alice.id}`, viaMarketplace('PRO', 'alice'))).json.data.url).toBe(
      'https://hooks.example.com/alice',
    );
  });

  it('refuses a body that is wrong, naming the field, and a URL the address rules refuse', async () => {
    const { call } = rig();
    const bad = async (body: unknown, pattern: RegExp) => {
      const r = await call('POST', '/v1/webhooks', key(KEY.pro), body);
      expect([r.status, r.json.error.code], JSON.stringify(body).slice(0, 80)).toEqual([400, 'bad_parameter']);
      expect(r.json.error.message).toMatch(pattern);
    };
    await bad({}, /url is required/);
    await bad({ url: 'https://hooks.example.com/', secret: 'x' }, /secret is not a field of this request/);
    await bad({ url: 'https://hooks.example.com/', fields: ['gravity.score'] }, /fields: "gravity.score" is not one of/);
    await bad({ url: 'https://hooks.example.com/', symbols: ['NOPE'] }, /symbols: "NOPE" is not a symbol of the catalogue/);
    await bad({ url: 'https://hooks.example.com/', universes: 'crypto' }, /universes must be a list/);
    await bad({ url: 'http://hooks.example.com/' }, /^url: /);
    await bad({ url: 'https://user:pw@hooks.example.com/' }, /^url: /);
    await bad({ url: 'https://127.0.0.1/' }, /^url: /);
    await bad({ url: 'https://hooks.example.com:8443/' }, /^url: .*8443/);
    await bad({ url: `https://hooks.example.com/${'a'.repeat(2100)}` }, /longer than 2048/);
    await bad('{"url": ', /must be JSON/);
    await bad({ url: 'https://hooks.example.com/', description: 'x'.repeat(17_000) }, /larger than 16 KB/);
  });

  it('takes only the methods each route names, with Allow', async () => {
    const { call } = rig();
    const e = (await call('POST', '/v1/webhooks', key(KEY.pro), { url: 'https://hooks.example.com/m' })).json.data;
    for (const [method, path, allow] of [
      ['PUT', '/v1/webhooks', 'GET, HEAD, POST'],
      ['POST', `/v1/webhooks/${e.id}`, 'GET, HEAD, PATCH, DELETE'],
      ['GET', `/v1/webhooks/${e.id}/test`, 'POST'],
      ['DELETE', `/v1/webhooks/${e.id}/deliveries`, 'GET, HEAD'],
    ] as const) {
      const r = await call(method, path, key(KEY.pro));
      expect([r.status, r.headers.get('allow')], `${method} ${path}`).toEqual([405, allow]);
    }
    // Every other route stays read-only (decision 10).
    expect((await call('POST', '/v1/assets', key(KEY.pro))).status).toBe(405);
  });

  it('counts these requests toward the minute, never the month', async () => {
    const { call } = rig();
    const before = (await call('GET', '/v1/usage', key(KEY.ultra))).json.data;
    await call('POST', '/v1/webhooks', key(KEY.ultra), { url: 'https://hooks.example.com/q' });
    await call('GET', '/v1/webhooks', key(KEY.ultra));
    const after = (await call('GET', '/v1/usage', key(KEY.ultra))).json.data;
    expect(after.month.used).toBe(before.month.used);
    expect(after.minute.used).toBe(before.minute.used + 3);
  });

  it('sends a signed test message at once, lists the attempt, rotates the secret, and changes settings keeping the position', async () => {
    const { call, sent } = rig();
    const made = (await call('POST', '/v1/webhooks', key(KEY.pro), { url: 'https://hooks.example.com/t' })).json.data;
    const tested = await call('POST', `/v1/webhooks/${made.id}/test`, key(KEY.pro));
    expect(tested.json.data).toMatchObject({ attempt: 1, status: 204, error: null });
    expect(JSON.parse(sent[0]!.body)).toMatchObject({ type: 'webhook.test', endpoint_id: made.id });
    expect(sent[0]!.headers['webhook-id']).toBe(tested.json.data.message_id);
    const log = (await call('GET', `/v1/webhooks/${made.id}/deliveries`, key(KEY.pro))).json.data;
    expect(log).toMatchObject({ endpoint_id: made.id, deliveries: [{ message_id: tested.json.data.message_id, status: 204 }] });
    const rotated = (await call('POST', `/v1/webhooks/${made.id}/rotate-secret`, key(KEY.pro))).json.data;
    expect(rotated.secret).not.toBe(made.secret);
    expect(Date.parse(rotated.previous_secret_expires_at) - Date.now()).toBeGreaterThan(23 * 3600_000);
    await call('POST', `/v1/webhooks/${made.id}/test`, key(KEY.pro));
    expect(sent[1]!.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    const changed = await call('PATCH', `/v1/webhooks/${made.id}`, key(KEY.pro), {
      url: 'https://hooks2.example.com/t',
      fields: ['stale_models'],
      enabled: false,
    });
    expect(changed.json.data).toMatchObject({
      url: 'https://hooks2.example.com/t',
      fields: ['stale_models'],
      enabled: false,
      delivered_through: made.delivered_through,
    });
    expect(changed.json.data.disabled_reason).toMatch(/^disabled by its owner at /);
    const again = await call('PATCH', `/v1/webhooks/${made.id}`, key(KEY.pro), { enabled: true });
    expect(again.json.data).toMatchObject({ enabled: true, disabled_reason: null });
  });

  it('answers 503 with Retry-After at once while another process holds the database, and takes the request after', async () => {
    const file = join(tempDir('rr-webhook-routes-'), 'quotas.sqlite');
    const quotas = await openQuotaStore(file, () => {});
    const store = webhookStoreBeside(quotas, file);
    const { call } = rigOver(store);
    const shell = new DatabaseSync(file);
    shell.exec('BEGIN IMMEDIATE'); // a sqlite3 shell in a transaction
    const started = performance.now();
    const busy = await call('POST', '/v1/webhooks', key(KEY.pro), { url: 'https://hooks.example.com/held' });
    // The server's connection waits 50 ms for the lock, not SQLite's 5 s: the generous bound fails only a stall.
    expect(performance.now() - started).toBeLessThan(2_000);
    expect([busy.status, busy.json.error.code, busy.headers.get('retry-after')]).toEqual([503, 'gateway_not_configured', '1']);
    expect(busy.json.error.message).toBe('The webhook store could not be read or written just now; retry');
    shell.exec('COMMIT');
    shell.close();
    expect((await call('POST', '/v1/webhooks', key(KEY.pro), { url: 'https://hooks.example.com/held' })).status).toBe(201);
    expect((await call('GET', '/v1/webhooks', key(KEY.pro))).json.data.endpoints).toHaveLength(1);
    await quotas.close?.();
  });

  it('a create whose store failed without saying whether it wrote (a Redis that timed out) leaves no endpoint behind its 503', async () => {
    const store = addTimedOut();
    const { call, said } = rigOver(store);
    const failed = await call('POST', '/v1/webhooks', key(KEY.pro), { url: 'https://hooks.example.com/late' });
    expect([failed.status, failed.json.error.code]).toEqual([503, 'gateway_not_configured']);
    expect(await store.list()).toEqual([]);
    // The operator reads the store's reason, not a stack: the store's failure is one the docs name, not a bug.
    expect(said).toEqual(['shim: webhook store: Command timed out']);
  });

  it('a create whose undoing removal fails too names the endpoint that may stay in the log', async () => {
    const store = addTimedOut();
    store.remove = () => Promise.reject(new Error('Connection is closed.'));
    const { call, said } = rigOver(store);
    const failed = await call('POST', '/v1/webhooks', key(KEY.pro), { url: 'https://hooks.example.com/late' });
    expect([failed.status, failed.json.error.code]).toEqual([503, 'gateway_not_configured']);
    const [left] = await store.list();
    expect(said).toEqual([
      `shim: webhook store: Command timed out; endpoint ${left!.id} may have been stored, and its removal failed too (Connection is closed.)`,
    ]);
  });

  it('logs a mistake in code on a webhook route with its stack, and answers it 503 as a store failure', async () => {
    const store = new MemoryWebhookStore();
    store.list = () => Promise.reject(new TypeError("Cannot read properties of undefined (reading 'id')"));
    const { call, said } = rigOver(store);
    expect((await call('GET', '/v1/webhooks', key(KEY.pro))).status).toBe(503);
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(/^shim: unexpected TypeError: Cannot read properties of undefined \(reading 'id'\)\n +at /);
  });

  it('answers 404 where the gateway has no webhook store', async () => {
    const r = await rig({ webhooks: undefined }).call('GET', '/v1/webhooks', key(KEY.pro));
    expect([r.status, r.json.error.code]).toEqual([404, 'not_found']);
  });
});
