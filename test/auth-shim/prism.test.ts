/**
 * A validator nobody here wrote: Stoplight Prism, as a proxy in front of the Node server, checks every response
 * (status, headers, body) against the OpenAPI document the gateway serves, and marks each one that breaks it with
 * an `sl-violations` header. Every endpoint, every plan, the error vocabulary: no response may break the document.
 * The webhook routes too, each request body Prism checks on its way in; their receiver answers every message 200.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Server } from 'node:http';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer } from '../../auth-shim/node/server.js';
import { ROOT } from '../helpers.js';
import { minuteClock } from './suite.js';
import { KEY, KEYS_FILE, builtTree, treeJson } from './tree.js';

let server: Server;
let prism: ChildProcess;
let proxy = '';

/** A port nothing listens on now. */
const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });

/** Prism as a proxy to `upstream`, checking against the served document; its URL once it listens. */
async function startPrism(upstream: string): Promise<string> {
  const port = await freePort();
  prism = spawn(
    process.execPath,
    [
      join(ROOT, 'node_modules', '@stoplight', 'prism-cli', 'dist', 'index.js'),
      'proxy',
      join(builtTree(), 'v1', 'openapi.json'),
      upstream,
      '--port',
      String(port),
      '--errors',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  await new Promise<void>((resolve, reject) => {
    let said = '';
    const listen = (d: Buffer) => {
      said += String(d);
      if (said.includes('Prism is listening')) resolve();
    };
    prism.stdout!.on('data', listen);
    prism.stderr!.on('data', listen);
    prism.once('exit', (code) => reject(new Error(`prism exited ${code}: ${said.slice(-2000)}`)));
  });
  return `http://127.0.0.1:${port}`;
}

beforeAll(async () => {
  const out = builtTree();
  const s = await startServer({
    publicDir: out,
    keysFile: KEYS_FILE,
    port: 0,
    watchMs: 0,
    now: minuteClock(),
    marketplaceHost: 'risk-readings.marketplace.example',
    marketplaceSecret: 'proxy-secret-for-tests',
    webhookPolicy: { allowLoopback: true },
    webhookSend: () => Promise.resolve({ status: 200, error: null, ms: 1, retryAfterMs: null }),
  });
  server = s.server;
  proxy = await startPrism(s.url);
});

afterAll(async () => {
  prism?.kill();
  await new Promise<void>((r) => server?.close(() => r()));
});

describe('Prism between a client and the gateway', () => {
  it('finds no response that breaks the served document, on every endpoint and plan, errors included', async () => {
    const catalog = treeJson(builtTree(), '_catalog.json') as { assets: Record<string, unknown>; universes: Record<string, unknown> };
    const symbols = Object.keys(catalog.assets);
    const requests: [string, Record<string, string>, string?][] = [
      ['/v1/health', {}],
      ['/v1/openapi.json', {}],
    ];
    for (const key of [KEY.basic, KEY.pro, KEY.ultra]) {
      const h = { 'X-API-Key': key };
      requests.push(
        ['/v1/assets', h],
        ['/v1/changes?limit=4', h],
        ['/v1/changes?cursor=2&limit=3', h],
        ['/v1/bulk/risk?symbols=BTC,ETH,NOPE', h],
        ['/v1/usage', h],
      );
      for (const s of symbols)
        requests.push([`/v1/assets/${s}/risk`, h], [`/v1/assets/${s}/history?limit=4`, h], [`/v1/signals/dca/${s}`, h]);
      for (const u of Object.keys(catalog.universes)) requests.push([`/v1/market/${u}/summary`, h]);
      // A path or a method the document does not name is Prism's own to refuse: only the gateway's answers count.
      requests.push(['/v1/assets/NOPE/risk', h], ['/v1/signals/dca/NOPE', h]);
    }
    // No credential at all is Prism's to refuse (the document requires one); a wrong one reaches the gateway.
    requests.push(['/v1/assets/BTC/risk', { 'X-API-Key': 'not-a-key' }], ['/v1/usage', { 'X-API-Key': 'not-a-key' }]);
    requests.push([
      '/v1/usage',
      {
        'x-marketplace-key': 'subscriber',
        'x-marketplace-host': 'risk-readings.marketplace.example',
        'x-marketplace-proxy-secret': 'proxy-secret-for-tests',
        'x-marketplace-subscription': 'BASIC',
      },
    ]);
    requests.push([
      '/v1/assets/SPY/risk',
      {
        'x-marketplace-key': 'subscriber',
        'x-marketplace-host': 'risk-readings.marketplace.example',
        'x-marketplace-proxy-secret': 'proxy-secret-for-tests',
        'x-marketplace-subscription': 'PRO',
      },
    ]);
    const statuses = new Map<number, number>();
    const broken: string[] = [];
    for (const [path, headers] of requests) {
      const res = await fetch(proxy + path, { headers });
      await res.arrayBuffer();
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      const violations = res.headers.get('sl-violations');
      if (violations) broken.push(`${path} ${res.status}: ${violations}`);
      // Prism's own refusals are problem+json: each answer here must be the gateway's.
      expect(res.headers.get('content-type'), path).toMatch(/^application\/json/);
    }
    expect(broken).toEqual([]);
    expect([...statuses.keys()].sort()).toEqual([200, 401, 403, 404]);
    expect(statuses.get(200)!).toBeGreaterThan(40);
  });

  it('finds no webhook answer that breaks the served document: each route and method, every plan, the refusals', async () => {
    const statuses = new Map<number, number>();
    const broken: string[] = [];
    const call = async (method: string, path: string, headers: Record<string, string>, body?: unknown) => {
      const res = await fetch(proxy + path, {
        method,
        headers: body === undefined ? headers : { ...headers, 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      const violations = res.headers.get('sl-violations');
      if (violations) broken.push(`${method} ${path} ${res.status}: ${violations}`);
      // Prism's own refusals (a request the document does not allow) are problem+json: each answer here is the gateway's.
      if (res.status !== 204)
        expect(res.headers.get('content-type'), `${method} ${path} ${res.status}: ${text.slice(0, 300)}`).toMatch(/^application\/json/);
      return { status: res.status, json: text ? (JSON.parse(text) as { data: Record<string, unknown> }) : null };
    };
    const create = {
      url: 'https://hooks.example.com/risk',
      fields: ['gravity.risk_level', 'stale_models'],
      symbols: ['BTC'],
      description: 'desk',
    };
    for (const key of [KEY.basic, KEY.pro, KEY.ultra]) {
      const h = { 'X-API-Key': key };
      expect((await call('GET', '/v1/webhooks', h)).status).toBe(200);
      const made = await call('POST', '/v1/webhooks', h, create);
      expect(made.status, JSON.stringify(made.json)).toBe(201);
      const id = made.json!.data.id as string;
      await call('POST', '/v1/webhooks', h, { url: 'https://hooks.example.com/all' });
      await call('GET', `/v1/webhooks/${id}`, h);
      await call('PATCH', `/v1/webhooks/${id}`, h, { enabled: false, universes: ['crypto'], description: null });
      await call('PATCH', `/v1/webhooks/${id}`, h, { enabled: true });
      await call('POST', `/v1/webhooks/${id}/test`, h);
      await call('POST', `/v1/webhooks/${id}/rotate-secret`, h);
      await call('GET', `/v1/webhooks/${id}/deliveries`, h);
      await call('GET', '/v1/webhooks', h);
      // Bodies the document allows that the shim refuses: a symbol not served, an address that is not https.
      await call('POST', '/v1/webhooks', h, { url: 'https://hooks.example.com/x', symbols: ['NOTSERVED'] });
      await call('PATCH', `/v1/webhooks/${id}`, h, { url: 'ftp://hooks.example.com/x' });
      await call('GET', '/v1/webhooks/ep_000000000000000000000000', h);
      expect((await call('DELETE', `/v1/webhooks/${id}`, h)).status).toBe(204);
      await call('GET', `/v1/webhooks/${id}/deliveries`, h);
    }
    await call('GET', '/v1/webhooks', { 'X-API-Key': 'not-a-key' });
    const marketplace = {
      'x-marketplace-key': 'subscriber',
      'x-marketplace-host': 'risk-readings.marketplace.example',
      'x-marketplace-proxy-secret': 'proxy-secret-for-tests',
      'x-marketplace-subscription': 'PRO',
    };
    await call('GET', '/v1/webhooks', marketplace);
    await call('GET', '/v1/webhooks', { ...marketplace, 'x-marketplace-user': 'user-1' });
    expect(broken).toEqual([]);
    expect([...statuses.keys()].sort()).toEqual([200, 201, 204, 400, 401, 403, 404]);
    // Prism holds each body to the document on its way in: a member the document does not name is its own to refuse.
    const extra = await fetch(`${proxy}/v1/webhooks`, {
      method: 'POST',
      headers: { 'X-API-Key': KEY.pro, 'Content-Type': 'application/json' },
      body: JSON.stringify({ ...create, secret: 'whsec_mine' }),
    });
    expect([extra.status, extra.headers.get('content-type')]).toEqual([422, expect.stringMatching(/^application\/problem\+json/)]);
  });
});
