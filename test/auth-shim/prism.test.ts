/**
 * A validator nobody here wrote: Stoplight Prism, as a proxy in front of the Node server, checks every response
 * (status, headers, body) against the OpenAPI document the gateway serves, and marks each one that breaks it with
 * an `sl-violations` header. Every endpoint, every plan, the error vocabulary: no response may break the document.
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
  });
  server = s.server;
  const port = await freePort();
  prism = spawn(
    process.execPath,
    [
      join(ROOT, 'node_modules', '@stoplight', 'prism-cli', 'dist', 'index.js'),
      'proxy',
      join(out, 'v1', 'openapi.json'),
      s.url,
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
  proxy = `http://127.0.0.1:${port}`;
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
});
