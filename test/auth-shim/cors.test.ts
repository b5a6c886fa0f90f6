/**
 * Browsers, where the operator allows them (decision 105), end to end: the Node server over real HTTP (as `serve
 * --cors-origin` starts it, and through the compiled CLI) and the edge entry under workerd (as wrangler bundles it,
 * `CORS_ORIGINS` among its bindings), each on a clock the test sets. The same cases run on both: an allowed origin's
 * 200, HEAD, 304, 401, 403, 404, 405 and 429 carry the CORS headers, its preflight is 204 and counted nowhere, an
 * origin not allowed gets none and its preflight is the 405 of today, and `*` allows any page.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN } from '../helpers.js';
import { block } from '../docs/blocks.js';
import { startServer } from '../../auth-shim/node/server.js';
import { startEdge, type Edge } from './edge-setup.js';
import { rawRequest } from './raw-http.js';
import { expectError } from './suite.js';
import { KEY, KEYS_FILE, builtTree } from './tree.js';

const DASH = 'https://dash.example.com';
const APP = 'http://localhost:5173';
const ELSEWHERE = 'https://evil.example.net';

const EXPOSED =
  'ETag, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, RateLimit-Policy, RateLimit, X-RateLimit-Requests-Limit, ' +
  'X-RateLimit-Requests-Remaining, X-RateLimit-Requests-Reset, Retry-After, X-Request-Id';
const ALLOWED_HEADERS =
  'x-api-key, x-marketplace-key, x-marketplace-host, x-marketplace-proxy-secret, x-marketplace-subscription, x-rapidapi-key, ' +
  'x-rapidapi-host, x-rapidapi-proxy-secret, x-rapidapi-subscription, If-None-Match, X-Request-Id';

/** A request at an instant the test chooses (ms). */
type Call = (path: string, init: { at: number; headers?: Record<string, string>; method?: string }) => Promise<Response>;

/** A request to a Node server exactly as sent and answered, at the instant it says. */
const nodeCall =
  (base: string, clock: { t: number }): Call =>
  (path, init) => {
    clock.t = init.at;
    return rawRequest(base, path, init);
  };

/** The edge on the clock the test sets: each request carries its instant (edge-clock-worker.ts). */
const edgeCall =
  (edge: Edge): Call =>
  (path, init) =>
    edge.call(path, { method: init.method, headers: { ...init.headers, 'x-test-clock': String(init.at) } });

/** Every CORS header of a response, by lower-case name. */
const corsOf = (res: Response) => Object.fromEntries([...res.headers].filter(([k]) => k.startsWith('access-control-')));

/** A quiet minute of its own for each test: the clock a day apart, within one month (October 2026). */
let day = 0;
const minuteOfItsOwn = () => Date.UTC(2026, 9, 2 + day++, 12, 0, 0);

function corsSuite(name: string, setup: () => { call: Call; any: Call }) {
  describe(`${name}: an allowed origin (decision 105)`, () => {
    const allowedOn = (res: Response, origin: string) => {
      expect(res.headers.get('access-control-allow-origin')).toBe(origin);
      expect(res.headers.get('access-control-expose-headers')).toBe(EXPOSED);
      expect(res.headers.get('vary')).toMatch(/(^|, )Origin$/);
      expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    };

    it('gets the CORS headers on a 200, a HEAD and a 304, with Vary merged and the ETag exposed', async () => {
      const { call } = setup();
      const at = minuteOfItsOwn();
      const ok = await call('/v1/assets/BTC/risk', { at, headers: { 'X-API-Key': KEY.pro, Origin: DASH } });
      expect(ok.status).toBe(200);
      allowedOn(ok, DASH);
      // The credential headers and the coding stay in Vary, Origin after them.
      expect(ok.headers.get('vary')).toMatch(/^x-api-key, .*x-rapidapi-subscription, (Accept-Encoding, )?Origin$/);
      expect(ok.headers.get('etag')).toMatch(/^"[0-9a-f]{64}"$/);
      // Every header a client reads the quota or the tag from is exposed, whatever header a later release adds.
      const readable = EXPOSED.toLowerCase().split(', ');
      for (const [h] of ok.headers) if (/ratelimit|retry-after|etag|request-id/.test(h)) expect(readable, h).toContain(h);
      const head = await call('/v1/assets/BTC/risk', { at, method: 'HEAD', headers: { 'X-API-Key': KEY.pro, Origin: APP } });
      expect(head.status).toBe(200);
      allowedOn(head, APP);
      const etag = ok.headers.get('etag')!;
      const same = await call('/v1/assets/BTC/risk', { at, headers: { 'X-API-Key': KEY.pro, Origin: DASH, 'If-None-Match': etag } });
      expect(same.status).toBe(304);
      allowedOn(same, DASH);
      expect(same.headers.get('etag')).toBe(etag);
      expect(same.headers.get('ratelimit-remaining')).not.toBeNull();
    });

    it('gets them on every refusal: 401, 403, 404, 405 and 429 with its Retry-After', async () => {
      const { call } = setup();
      const at = minuteOfItsOwn();
      const basic = { 'X-API-Key': KEY.basic, Origin: DASH };
      const unauthorized = await call('/v1/assets/BTC/risk', { at, headers: { 'X-API-Key': 'not-a-key', Origin: DASH } });
      await expectError(unauthorized, 401, 'unauthorized');
      allowedOn(unauthorized, DASH);
      const forbidden = await call('/v1/assets/SPY/risk', { at, headers: basic });
      await expectError(forbidden, 403, 'plan_required');
      allowedOn(forbidden, DASH);
      const missing = await call('/v1/assets/NOPE/risk', { at, headers: basic });
      await expectError(missing, 404, 'unknown_asset');
      allowedOn(missing, DASH);
      // Not a preflight (no Access-Control-Request-Method): any other OPTIONS is the 405 of decision 10, readable.
      const options = await call('/v1/assets/BTC/risk', { at, method: 'OPTIONS', headers: { Origin: DASH } });
      await expectError(options, 405, 'method_not_allowed');
      allowedOn(options, DASH);
      const post = await call('/v1/assets/BTC/risk', { at, method: 'POST', headers: basic });
      await expectError(post, 405, 'method_not_allowed');
      allowedOn(post, DASH);
      // Basic takes 5 a minute: the 403 and the 404 counted toward it (the 401 and the 405s are not), three more, then
      // the minute is spent.
      for (let i = 0; i < 3; i++) expect((await call('/v1/assets/BTC/risk', { at: at + i, headers: basic })).status).toBe(200);
      const limited = await call('/v1/assets/BTC/risk', { at: at + 2_000, headers: basic });
      await expectError(limited, 429, 'rate_limited');
      allowedOn(limited, DASH);
      expect(limited.headers.get('retry-after')).toBe('58');
      expect(limited.headers.get('ratelimit-remaining')).toBe('0');
    });

    it('its preflight is 204, allows GET and HEAD with the credential headers for 7200 s, and is counted nowhere', async () => {
      const { call } = setup();
      const at = minuteOfItsOwn();
      const pro = { 'X-API-Key': KEY.pro };
      const before = (await (await call('/v1/usage', { at, headers: pro })).json()).data;
      for (const path of ['/v1/assets/BTC/risk', '/v1/usage', '/v1/bulk/risk?symbols=BTC,ETH']) {
        const res = await call(path, {
          at: at + 1_000,
          method: 'OPTIONS',
          headers: {
            Origin: APP,
            'Access-Control-Request-Method': 'GET',
            'Access-Control-Request-Headers': 'if-none-match,x-api-key',
            'X-Request-Id': 'preflight-1',
          },
        });
        expect(res.status, path).toBe(204);
        expect(await res.text()).toBe('');
        expect(corsOf(res)).toEqual({
          'access-control-allow-origin': APP,
          'access-control-allow-methods': 'GET, HEAD',
          'access-control-allow-headers': ALLOWED_HEADERS,
          'access-control-max-age': '7200',
        });
        expect(res.headers.get('vary')).toBe('Origin');
        expect(res.headers.get('x-request-id')).toBe('preflight-1');
        // No quota was asked: no rate-limit header.
        expect(res.headers.get('ratelimit-remaining')).toBeNull();
      }
      // The minute counts the second usage call alone; the month, which usage never counts, is as it was.
      const after = (await (await call('/v1/usage', { at: at + 2_000, headers: pro })).json()).data;
      expect(after.minute.used).toBe(before.minute.used + 1);
      expect(after.month.used).toBe(before.month.used);
    });

    it('a webhook route’s preflight allows the methods that route takes, and Content-Type where it takes a body', async () => {
      const { call } = setup();
      const at = minuteOfItsOwn();
      const id = 'ep_0123456789abcdef01234567';
      const cases: [string, string, string][] = [
        ['/v1/webhooks', 'POST', 'GET, HEAD, POST'],
        [`/v1/webhooks/${id}`, 'PATCH', 'GET, HEAD, PATCH, DELETE'],
        [`/v1/webhooks/${id}/test`, 'POST', 'POST'],
        [`/v1/webhooks/${id}/rotate-secret`, 'POST', 'POST'],
        [`/v1/webhooks/${id}/deliveries`, 'GET', 'GET, HEAD'],
      ];
      for (const [path, method, methods] of cases) {
        const res = await call(path, {
          at,
          method: 'OPTIONS',
          headers: { Origin: APP, 'Access-Control-Request-Method': method, 'Access-Control-Request-Headers': 'content-type,x-api-key' },
        });
        expect(res.status, path).toBe(204);
        expect(res.headers.get('access-control-allow-methods'), path).toBe(methods);
        const body = methods.includes('POST') || methods.includes('PATCH');
        expect(res.headers.get('access-control-allow-headers'), path).toBe(body ? `${ALLOWED_HEADERS}, Content-Type` : ALLOWED_HEADERS);
        expect(res.headers.get('ratelimit-remaining'), path).toBeNull();
      }
    });

    it('health and the document keep Access-Control-Allow-Origin: * and expose the same headers', async () => {
      const { call } = setup();
      const at = minuteOfItsOwn();
      for (const path of ['/v1/health', '/v1/openapi.json']) {
        const res = await call(path, { at, headers: { Origin: DASH } });
        expect(res.status).toBe(200);
        allowedOn(res, '*');
      }
    });
  });

  describe(`${name}: an origin not allowed, and a request without one`, () => {
    it('gets no CORS header on any answer; its preflight is the 405 of decision 10', async () => {
      const { call } = setup();
      const at = minuteOfItsOwn();
      // Another site, an opaque origin, none at all, and two that are only near an allowed one: matched exactly.
      const others: Record<string, string>[] = [
        { Origin: ELSEWHERE },
        { Origin: 'null' },
        {},
        { Origin: DASH.toUpperCase() },
        { Origin: `${DASH}:8443` },
      ];
      for (const headers of others) {
        const ok = await call('/v1/assets/ETH/risk', { at, headers: { 'X-API-Key': KEY.ultra, ...headers } });
        expect(ok.status).toBe(200);
        expect(corsOf(ok)).toEqual({});
        // The answer still varies by Origin, so no cache hands it to an allowed page (the Fetch standard's advice).
        expect(ok.headers.get('vary')).toMatch(/, Origin$/);
        await expectError(
          await call('/v1/assets/NOPE/risk', { at, headers: { 'X-API-Key': KEY.ultra, ...headers } }),
          404,
          'unknown_asset',
        );
        const preflight = await call('/v1/assets/ETH/risk', {
          at,
          method: 'OPTIONS',
          headers: { ...headers, 'Access-Control-Request-Method': 'GET', 'Access-Control-Request-Headers': 'x-api-key' },
        });
        await expectError(preflight, 405, 'method_not_allowed');
        expect(preflight.headers.get('allow')).toBe('GET, HEAD');
        expect(corsOf(preflight)).toEqual({});
      }
    });
  });

  describe(`${name}: * allows any page`, () => {
    it('answers any origin with Access-Control-Allow-Origin: *, its preflight 204, and no origin with none', async () => {
      const { any } = setup();
      const at = minuteOfItsOwn();
      for (const origin of [ELSEWHERE, DASH, 'null']) {
        const ok = await any('/v1/assets/BTC/risk', { at, headers: { 'X-API-Key': KEY.pro, Origin: origin } });
        expect(ok.status).toBe(200);
        expect(ok.headers.get('access-control-allow-origin')).toBe('*');
        expect(ok.headers.get('access-control-expose-headers')).toBe(EXPOSED);
        const refused = await any('/v1/assets/BTC/risk', { at, headers: { Origin: origin } });
        await expectError(refused, 401, 'unauthorized');
        expect(refused.headers.get('access-control-allow-origin')).toBe('*');
        const preflight = await any('/v1/changes', {
          at,
          method: 'OPTIONS',
          headers: { Origin: origin, 'Access-Control-Request-Method': 'GET' },
        });
        expect(preflight.status).toBe(204);
        expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
        expect(preflight.headers.get('access-control-allow-headers')).toBe(ALLOWED_HEADERS);
      }
      expect(corsOf(await any('/v1/assets/BTC/risk', { at, headers: { 'X-API-Key': KEY.pro } }))).toEqual({});
    });
  });
}

describe('the Node server with --cors-origin', () => {
  const servers: Server[] = [];
  let call: Call;
  let any: Call;
  let keyless = '';
  beforeAll(async () => {
    const start = async (corsOrigins: string[], keys = true) => {
      const clock = { t: 0 };
      const s = await startServer({
        publicDir: builtTree(),
        ...(keys ? { keysFile: KEYS_FILE } : {}),
        port: 0,
        watchMs: 0,
        now: () => clock.t,
        corsOrigins,
      });
      servers.push(s.server);
      return { base: s.url, call: nodeCall(s.url, clock) };
    };
    call = (await start([DASH, APP])).call;
    any = (await start(['*'])).call;
    keyless = (await start([DASH], false)).base;
  });
  afterAll(() => Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r())))));

  corsSuite('Node server', () => ({ call, any }));

  it('a 5xx is readable too: 503 gateway_not_configured, its Retry-After exposed', async () => {
    const res = await nodeCall(keyless, { t: 0 })('/v1/assets/BTC/risk', { at: Date.UTC(2026, 9, 1), headers: { Origin: DASH } });
    await expectError(res, 503, 'gateway_not_configured');
    expect(res.headers.get('access-control-allow-origin')).toBe(DASH);
    expect(res.headers.get('access-control-expose-headers')).toBe(EXPOSED);
    expect(res.headers.get('retry-after')).toBe('60');
  });
});

describe('the edge with CORS_ORIGINS', () => {
  let edge: Edge;
  let anyEdge: Edge;
  let said = '';
  beforeAll(async () => {
    const keys = readFileSync(KEYS_FILE, 'utf8');
    const entry = 'test/auth-shim/edge-clock-worker.ts';
    // The value docs/edge.md gives (decision 99: the recipes run as written), and an entry that is no origin, which
    // is left out with a line in the log.
    const documented = /^CORS_ORIGINS = "([^"]*)"/m.exec(block('edge.md', 'toml', 'CORS_ORIGINS'))![1]!;
    expect(documented).toBe(`${DASH}, ${APP}`);
    edge = await startEdge({
      entry,
      out: builtTree(),
      keys,
      bindings: { CORS_ORIGINS: `${documented}  https://dash.example.com/app` },
      onStderr: (text) => (said += text),
    });
    anyEdge = await startEdge({ entry, out: builtTree(), keys, bindings: { CORS_ORIGINS: '*' } });
  });
  afterAll(async () => {
    await edge?.close();
    await anyEdge?.close();
  });

  corsSuite('edge under workerd', () => ({ call: edgeCall(edge), any: edgeCall(anyEdge) }));

  it('logs an entry of CORS_ORIGINS that is no origin, and allows nothing for it', () => {
    expect(said).toContain('shim: CORS_ORIGINS: "https://dash.example.com/app" is not an origin scheme://host[:port] with no path');
  });
});

/** A port free on loopback now: the compiled CLI's --port takes 1-65535. */
const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createNetServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });

describe('risk-readings serve --cors-origin (compiled)', () => {
  it('takes the option repeated, each origin as a browser sends it', async () => {
    const port = await freePort();
    const args = ['serve', '--public', builtTree(), '--keys', KEYS_FILE, '--quotas', 'memory', '--port', String(port)];
    const serve = spawn(process.execPath, [BIN, ...args, '--cors-origin', 'HTTPS://Dash.Example.com:443', '--cors-origin', APP], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    try {
      await new Promise<void>((resolve, reject) => {
        serve.stderr!.on('data', (d) => String(d).includes('serving') && resolve());
        serve.on('exit', (code) => reject(new Error(`serve exited ${code}`)));
      });
      const at = Date.now();
      const call = nodeCall(`http://127.0.0.1:${port}`, { t: at });
      for (const origin of [DASH, APP]) {
        const preflight = await call('/v1/assets/BTC/risk', {
          at,
          method: 'OPTIONS',
          headers: { Origin: origin, 'Access-Control-Request-Method': 'GET' },
        });
        expect(preflight.status).toBe(204);
        expect(preflight.headers.get('access-control-allow-origin')).toBe(origin);
      }
      expect(corsOf(await call('/v1/assets/BTC/risk', { at, headers: { 'X-API-Key': KEY.pro, Origin: ELSEWHERE } }))).toEqual({});
    } finally {
      serve.kill('SIGTERM');
      await new Promise((r) => serve.once('exit', r));
    }
  });
});
