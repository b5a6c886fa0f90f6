/**
 * Webhooks at the edge (decision 108) under workerd, bundled from wrangler.toml as deployed: endpoints made through
 * the worker with a direct key from KV live in Durable Objects (one per endpoint, one per owner), and each endpoint's
 * object delivers on its alarm the refresh it notices on the origin, to real receivers on loopback
 * (WEBHOOKS_ALLOW_LOOPBACK, as only tests and local development may set it), signed as Standard Webhooks v1 and
 * checked with the `standardwebhooks` package a customer uses. A receiver answering 500 gets the same message again
 * about 5 s later, one answering 410 has its endpoint disabled, and a name that resolves (over DNS-over-HTTPS, here
 * the test's own server, WEBHOOKS_DOH_URL) to a private address is refused. The objects look for a refresh every
 * second here (edge-webhooks-worker.ts) instead of every 30 s; the test waits for events, never for a time. The
 * store the request path uses also passes every store's shared suite, against the objects in workerd.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DurableWebhookStore, edgeWebhooks } from '../../auth-shim/durable-webhooks.js';
import { edgeSend } from '../../auth-shim/edge-send.js';
import { retryAfterMs } from '../../auth-shim/webhooks/answer.js';
import type { EndpointRecord, WebhookStore } from '../../auth-shim/webhooks/store.js';
import { buildSmall, cliAsync, smallSite, tempDir, until } from '../helpers.js';
import { startEdge, WRANGLER_CONFIG, type Edge } from './edge-setup.js';
import { KEY, KEYS_FILE, treeJson } from './tree.js';
import { describeWebhookStore } from './webhooks/store-suite.js';

/** How long a delivery may take to show: generous, for a loaded machine; the test goes on as soon as it shows. */
const WAIT_MS = 120_000;
const PRIVATE_NAME = 'hooks.private.test';
const OPERATOR_TOKEN = 'operator-token-for-the-webhook-tests';

const root = tempDir('rr-edge-webhooks-');
const out = join(root, 'public');
let edge: Edge;

/** What the receivers got, in order. */
interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  at: number;
  status: number;
}
const received: Received[] = [];
/** Each receiver's answers, in turn; the last repeats. */
const ANSWERS: Record<string, number[]> = { '/ok': [204], '/flaky': [500, 200], '/gone': [410] };
let receiver: Server;
let receiverUrl = '';

/** The questions the DNS-over-HTTPS server was asked (`name type`). */
const asked: string[] = [];
let doh: Server;

const listen = async (s: Server) => {
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  return `http://127.0.0.1:${(s.address() as { port: number }).port}`;
};

async function build(day: number): Promise<void> {
  const pages = join(root, `day${day}`);
  await smallSite(pages, day);
  await buildSmall(pages, out, { now: `2026-10-${13 + day}T00:30:00Z` });
}

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      const answers = ANSWERS[path] ?? [404];
      const status = answers[Math.min(received.filter((r) => r.path === path).length, answers.length - 1)]!;
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
      received.push({ path, headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now(), status });
      res.writeHead(status).end();
    });
  });
  receiverUrl = await listen(receiver);
  // The JSON form of DNS-over-HTTPS, as cloudflare-dns.com answers it: the private name is 10.0.0.1, nothing else exists.
  doh = createServer((req, res) => {
    const q = new URL(req.url ?? '/', 'http://doh').searchParams;
    const name = q.get('name') ?? '';
    const type = q.get('type') ?? '';
    asked.push(`${name} ${type}`);
    const known = name === PRIVATE_NAME;
    const Answer = known && type === 'A' ? [{ name, type: 1, TTL: 60, data: '10.0.0.1' }] : [];
    res.writeHead(200, { 'content-type': 'application/dns-json' }).end(JSON.stringify({ Status: known ? 0 : 3, Answer }));
  });
  const dohUrl = await listen(doh);
  // The origin's tree before the refresh the endpoints are to be sent: days 1 and 2.
  await build(1);
  await build(2);
  edge = await startEdge({
    entry: 'test/auth-shim/edge-webhooks-worker.ts',
    out,
    keys: readFileSync(KEYS_FILE, 'utf8'),
    bindings: { WEBHOOKS_ALLOW_LOOPBACK: 'true', WEBHOOKS_DOH_URL: `${dohUrl}/dns-query`, OPERATOR_TOKEN },
  });
});
afterAll(async () => {
  await edge?.close();
  for (const s of [receiver, doh]) {
    s?.closeAllConnections();
    await new Promise<void>((r) => (s ? s.close(() => r()) : r()));
  }
});

/** A webhook route of the worker, with the ultra key; its answer's data. */
async function api(method: string, path: string, body?: unknown): Promise<{ status: number; data: Record<string, unknown> }> {
  const res = await edge.mf.dispatchFetch(`http://edge.test${path}`, {
    method,
    headers: { 'X-API-Key': KEY.ultra, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, data: text ? (JSON.parse(text) as { data: Record<string, unknown> }).data : {} };
}

interface Made {
  id: string;
  secret: string;
}
const made: Record<string, Made> = {};
let before = 0;

const deliveries = async (id: string) =>
  (await api('GET', `/v1/webhooks/${id}/deliveries`)).data.deliveries as {
    message_id: string;
    attempt: number;
    status: number | null;
    error: string | null;
  }[];

describe('webhooks at the edge: Durable Objects, alarms and a real receiver', () => {
  it('makes endpoints through the worker, each starting at the end of the feed', async () => {
    before = treeJson(out, 'changes/ledger.json').events.length;
    expect(before).toBeGreaterThan(0);
    const urls = {
      ok: `${receiverUrl}/ok`,
      flaky: `${receiverUrl}/flaky`,
      gone: `${receiverUrl}/gone`,
      private: `http://${PRIVATE_NAME}:9/private`,
    };
    for (const [name, url] of Object.entries(urls)) {
      const r = await api('POST', '/v1/webhooks', { url, description: name });
      expect(r.status, JSON.stringify(r.data)).toBe(201);
      expect(r.data).toMatchObject({ url, enabled: true, delivered_through: before, pending: 0 });
      expect(r.data.secret).toMatch(/^whsec_/);
      made[name] = { id: r.data.id as string, secret: r.data.secret as string };
    }
    const listed = await api('GET', '/v1/webhooks');
    expect(listed.status).toBe(200);
    expect((listed.data.endpoints as { id: string }[]).map((e) => e.id)).toEqual(Object.values(made).map((m) => m.id));
    // Nothing is sent before a refresh.
    expect(received).toEqual([]);
  });

  it('sends the next refresh once the origin publishes it, signed as Standard Webhooks v1', async () => {
    await build(3);
    const after = treeJson(out, 'changes/ledger.json').events.length;
    expect(after).toBeGreaterThan(before);
    const ok = await until(() => received.find((r) => r.path === '/ok'), WAIT_MS, 100);
    expect(ok, 'the refresh reached /ok').toBeTruthy();
    // What a customer runs: the library checks the signature and the timestamp, and hands back the message.
    const message = new Webhook(made.ok!.secret).verify(ok!.body, ok!.headers) as Record<string, unknown>;
    expect(message).toMatchObject({ type: 'changes.published', from_position: before + 1 });
    const to = message.to_position as number;
    expect(to).toBeGreaterThan(before);
    expect(to).toBeLessThanOrEqual(after);
    expect((message.events as unknown[]).length).toBeGreaterThan(0);
    expect(ok!.headers['webhook-id']).toBe(`msg_${made.ok!.id}_${to}`);
    expect(ok!.headers['user-agent']).toBe('risk-readings-webhooks/1');
    // Another endpoint's secret does not verify it.
    expect(() => new Webhook(made.flaky!.secret).verify(ok!.body, ok!.headers)).toThrow();
    await until(async () => (await api('GET', `/v1/webhooks/${made.ok!.id}`)).data.delivered_through === after, WAIT_MS, 200);
    expect((await api('GET', `/v1/webhooks/${made.ok!.id}`)).data).toMatchObject({ delivered_through: after, pending: 0, enabled: true });
  });

  it('sends a message answered 500 again, with the same id, about 5 s later', async () => {
    const flaky = () => received.filter((r) => r.path === '/flaky');
    expect(await until(() => flaky().length >= 2, WAIT_MS, 100)).toBe(true);
    const [first, second] = flaky();
    expect([first!.status, second!.status]).toEqual([500, 200]);
    expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    expect(second!.body).toBe(first!.body);
    new Webhook(made.flaky!.secret).verify(second!.body, second!.headers);
    // The first retry is 5 s +-10% on: no sooner (a bound from below only; a loaded machine is slower).
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(4_400);
    const log = await deliveries(made.flaky!.id);
    expect(log.map((a) => [a.attempt, a.status])).toEqual([
      [2, 200],
      [1, 500],
    ]);
    expect(log[0]!.message_id).toBe(first!.headers['webhook-id']);
  });

  it('disables an endpoint whose receiver answers 410, saying why', async () => {
    expect(await until(() => received.some((r) => r.path === '/gone'), WAIT_MS, 100)).toBe(true);
    const gone = await until(
      async () => {
        const e = (await api('GET', `/v1/webhooks/${made.gone!.id}`)).data;
        return e.enabled === false ? e : null;
      },
      WAIT_MS,
      200,
    );
    expect(gone).toMatchObject({ enabled: false, disabled_reason: expect.stringMatching(/^the endpoint answered 410 Gone at /) });
    // Disabled, it is sent nothing more.
    await new Promise((r) => setTimeout(r, 3_000));
    expect(received.filter((r) => r.path === '/gone')).toHaveLength(1);
  });

  it('refuses a name that resolves to a private address, asked over DNS-over-HTTPS before the attempt', async () => {
    const refusal = `${PRIVATE_NAME} resolves to 10.0.0.1, a private address: refused`;
    const log = await until(
      async () => {
        const l = await deliveries(made.private!.id);
        return l.length ? l : null;
      },
      WAIT_MS,
      200,
    );
    // Every attempt (the first, and the retries meanwhile) refused before any request.
    expect(log!.at(-1)).toMatchObject({ attempt: 1, status: null, error: refusal });
    for (const a of log!) expect(a).toMatchObject({ status: null, error: refusal });
    expect(asked).toContain(`${PRIVATE_NAME} A`);
    expect(asked).toContain(`${PRIVATE_NAME} AAAA`);
    // The test message of the request path goes through the same sender.
    const test = await api('POST', `/v1/webhooks/${made.private!.id}/test`);
    expect(test.status).toBe(200);
    expect(test.data).toMatchObject({ status: null, error: refusal });
    expect(received.some((r) => r.path === '/private')).toBe(false);
  });

  it('enables an endpoint again at once: its message is tried again, and deleting one frees it from the list', async () => {
    const again = await api('PATCH', `/v1/webhooks/${made.gone!.id}`, { enabled: true });
    expect(again.status).toBe(200);
    expect(again.data).toMatchObject({ enabled: true, disabled_reason: null });
    // Its receiver still answers 410: tried again (the same message), and disabled again.
    expect(await until(() => received.filter((r) => r.path === '/gone').length >= 2, WAIT_MS, 100)).toBe(true);
    const [first, second] = received.filter((r) => r.path === '/gone');
    expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    expect((await api('DELETE', `/v1/webhooks/${made.gone!.id}`)).status).toBe(204);
    expect((await api('GET', `/v1/webhooks/${made.gone!.id}`)).status).toBe(404);
    const listed = (await api('GET', '/v1/webhooks')).data.endpoints as { id: string }[];
    expect(listed.map((e) => e.id)).toEqual([made.ok!.id, made.flaky!.id, made.private!.id]);
  });
});

describe("the operator's view at the edge: risk-readings webhooks --quotas https://WORKER/", () => {
  const webhooks = (args: string[], token = OPERATOR_TOKEN) =>
    cliAsync(['webhooks', ...args], { RISK_READINGS_OPERATOR_TOKEN: token, RISK_READINGS_QUOTAS: '' });

  it('lists every endpoint through the operator route, never a secret, and disables and enables one', async () => {
    const worker = (await edge.mf.ready).toString();
    const listed = await webhooks(['list', '--quotas', worker, '--json']);
    expect(listed.status, listed.stderr).toBe(0);
    expect(listed.stdout).not.toMatch(/whsec_/);
    const all = JSON.parse(listed.stdout) as { id: string; owner: string; enabled: boolean }[];
    expect(all.map((e) => e.id)).toEqual(expect.arrayContaining([made.ok!.id, made.flaky!.id]));
    const off = await webhooks(['disable', made.ok!.id, '--quotas', worker, '--reason', 'maintenance']);
    expect(off.status, off.stderr).toBe(0);
    expect((await api('GET', `/v1/webhooks/${made.ok!.id}`)).data).toMatchObject({
      enabled: false,
      disabled_reason: expect.stringMatching(/^disabled by the operator at .*: maintenance$/),
    });
    const on = await webhooks(['enable', made.ok!.id, '--quotas', worker]);
    expect(on.status, on.stderr).toBe(0);
    expect((await api('GET', `/v1/webhooks/${made.ok!.id}`)).data).toMatchObject({ enabled: true, disabled_reason: null });
    // No such endpoint: exit 1 naming it; a wrong token meets the API's 404, said as what to check.
    const none = await webhooks(['enable', 'ep_000000000000000000000000', '--quotas', worker]);
    expect([none.status, none.stderr]).toEqual([1, `risk-readings webhooks: ${worker}: No webhook endpoint ep_000000000000000000000000\n`]);
    const wrong = await webhooks(['list', '--quotas', worker], 'wrong-token');
    expect(wrong.status).toBe(1);
    expect(wrong.stderr).toMatch(/no operator route for this token \(404\): RISK_READINGS_OPERATOR_TOKEN is not its OPERATOR_TOKEN/);
  });
});

describe('edgeSend, in Node (the same code the worker runs)', () => {
  const loopback = { allowLoopback: true };
  let server: Server;
  let base = '';
  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === '/moved') return void res.writeHead(302, { location: 'http://10.0.0.1/inside' }).end();
      if (req.url === '/busy') return void res.writeHead(503, { 'retry-after': '120' }).end();
      if (req.url === '/big') {
        // An answer far past 64 KB: read up to the cap, then dropped.
        res.writeHead(200);
        const chunk = Buffer.alloc(64 * 1024, 'x');
        const more = (): void => {
          if (res.destroyed || res.writableEnded) return;
          if (res.write(chunk)) setImmediate(more);
          else res.once('drain', more);
        };
        res.on('error', () => {});
        return more();
      }
      res.writeHead(204).end();
    });
    base = await listen(server);
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  it('refuses a name an injected resolver says is 10.0.0.1, and a URL the policy refuses, before any request', async () => {
    const r = await edgeSend('https://hooks.example.com/x', {}, '{}', {
      policy: { allowLoopback: false },
      resolve: () => Promise.resolve(['10.0.0.1']),
    });
    expect(r).toMatchObject({ status: null, error: 'hooks.example.com resolves to 10.0.0.1, a private address: refused' });
    const mixed = await edgeSend('https://hooks.example.com/x', {}, '{}', {
      policy: { allowLoopback: false },
      resolve: () => Promise.resolve(['93.184.215.14', 'fd00::1']),
    });
    expect(mixed.error).toMatch(/^hooks\.example\.com resolves to fd00::1, a unique-local address: refused$/);
    expect((await edgeSend(`${base}/`, {}, '{}', { policy: { allowLoopback: false } })).error).toMatch(/^the scheme is http/);
  });

  it('follows no redirect, reads Retry-After, and reads at most 64 KB of an answer', async () => {
    const moved = await edgeSend(`${base}/moved`, {}, '{}', { policy: loopback });
    expect(moved).toMatchObject({ status: 302, error: 'redirect to http://10.0.0.1/inside not followed' });
    const busy = await edgeSend(`${base}/busy`, {}, '{}', { policy: loopback });
    expect(busy).toMatchObject({ status: 503, error: '127.0.0.1 answered 503', retryAfterMs: 120_000 });
    const big = await edgeSend(`${base}/big`, {}, '{}', { policy: loopback, timeoutMs: 5_000 });
    expect(big).toMatchObject({ status: 200, error: null });
    expect(big.ms).toBeLessThan(5_000);
    expect(retryAfterMs('Wed, 21 Oct 2026 07:28:00 GMT', Date.UTC(2026, 9, 21, 7, 27))).toBe(60_000);
    expect(retryAfterMs('soon')).toBeNull();
  });

  it('gives the worker no webhooks without both bindings; wrangler.toml binds both, added by migration v3', () => {
    expect(edgeWebhooks({ ORIGIN_URL: 'https://origin.example/' })).toBeUndefined();
    const config = readFileSync(WRANGLER_CONFIG, 'utf8');
    expect(config).toMatch(/^\[\[durable_objects\.bindings\]\]\nname = "WEBHOOKS"\nclass_name = "WebhookEndpoint"$/m);
    expect(config).toMatch(/^\[\[durable_objects\.bindings\]\]\nname = "WEBHOOK_OWNERS"\nclass_name = "WebhookOwner"$/m);
    expect(config).toMatch(/^\[\[migrations\]\]\ntag = "v3"\nnew_sqlite_classes = \["WebhookEndpoint", "WebhookOwner"\]$/m);
    // The operator's loopback switch is never on in the shipped config.
    expect(config).not.toMatch(/^\s*WEBHOOKS_ALLOW_LOOPBACK\s*=/m);
  });
});

/**
 * The request path's store over the objects in workerd (miniflare's namespaces, from Node): each use of the shared
 * suite gets ids and owners of its own (the objects outlive a test), which it never sees.
 */
let suiteStores = 0;
describeWebhookStore('Durable Objects under workerd', async () => {
  const p = `s${suiteStores++}_`;
  const inner = new DurableWebhookStore(edge.objects('WEBHOOKS'), edge.objects('WEBHOOK_OWNERS'));
  const outside = (e: EndpointRecord): EndpointRecord => ({ ...e, id: e.id.slice(p.length), owner: e.owner.slice(p.length) });
  const store: WebhookStore = {
    list: async (owner) => (await inner.list(owner === undefined ? undefined : p + owner)).filter((e) => e.id.startsWith(p)).map(outside),
    get: async (id) => {
      const e = await inner.get(p + id);
      return e && outside(e);
    },
    add: (e, max) => inner.add({ ...e, id: p + e.id, owner: p + e.owner }, max),
    set: (id, fields) => inner.set(p + id, fields),
    remove: (id) => inner.remove(p + id),
    logAttempt: (id, a) => inner.logAttempt(p + id, a),
    attempts: (id) => inner.attempts(p + id),
    claim: (id, holder, ms, now) => inner.claim(p + id, holder, ms, now),
    release: (id, holder) => inner.release(p + id, holder),
  };
  return { store, close: () => Promise.resolve() };
});
