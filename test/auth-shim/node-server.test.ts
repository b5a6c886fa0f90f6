/** The Node entry over real HTTP on loopback: the shared suite, plus what only a real server shows. */
import { spawn } from 'node:child_process';
import { closeSync, copyFileSync, existsSync, openSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { request as httpRequest } from 'node:http';
import { connect, createServer as createNetServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, buildSmall, smallSite, tempDir, until } from '../helpers.js';
import { startServer } from '../../auth-shim/node/server.js';
import { createLogger, logAccess } from '../../auth-shim/node/observe.js';
import { minuteClock, shimSuite, type Call } from './suite.js';
import { rawRequest } from './raw-http.js';
import { KEY, KEYS_FILE, copiedTree } from './tree.js';

const root = tempDir('rr-node-');
let out = '';
let server: Server;
let base = '';

beforeAll(async () => {
  out = copiedTree(root);
  const s = await startServer({
    publicDir: out,
    keysFile: KEYS_FILE,
    port: 0,
    marketplaceHost: 'risk-readings.marketplace.example',
    marketplaceSecret: 'proxy-secret-for-tests',
    watchMs: 0,
    now: minuteClock(),
  });
  [server, base] = [s.server, s.url];
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** The response exactly as sent (fetch would decode it and add an Accept-Encoding of its own). */
const call: Call = (path, init = {}) => rawRequest(base, path, init);

shimSuite('Node server', () => ({ call, out }));

/** A raw request, so paths reach the server exactly as written (fetch would normalise them). */
function raw(path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, path, headers }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Bytes written straight to the server's socket, and everything it answers until it closes. */
function socketRequest(text: string): Promise<string> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    let got = '';
    const socket = connect(Number(url.port), url.hostname, () => socket.write(text));
    socket.on('data', (d) => (got += String(d)));
    socket.on('end', () => resolve(got));
    socket.on('error', reject);
  });
}

describe('Node server: raw HTTP', () => {
  it('keeps dot segments away from the tree', async () => {
    for (const p of ['/v1/assets/../../package.json', '/v1/../_catalog.json', '/v1/assets/BTC/../../_manifest.json']) {
      const r = await raw(p, { 'X-API-Key': KEY.pro });
      expect(r.status, p).toBeGreaterThanOrEqual(400);
      expect(r.status, p).toBeLessThan(500);
      expect(r.body).not.toMatch(/"files"|"devDependencies"/);
    }
  });

  it('refuses overlong headers with 431 and the JSON error body, never a 5xx', async () => {
    const r = await raw('/v1/assets/BTC/risk', { 'X-API-Key': KEY.pro, 'X-Padding': 'p'.repeat(40_000) });
    expect(r.status).toBe(431);
    expect(JSON.parse(r.body)).toMatchObject({ error: { code: 'bad_parameter' } });
  });

  it('answers what Node would refuse before the handler: an HTTP/1.0 probe without Host, a backslash, bad HTTP', async () => {
    const probe = await socketRequest('GET /v1/health HTTP/1.0\r\n\r\n');
    expect(probe).toMatch(/^HTTP\/1\.[01] 200/);
    expect(probe).toContain('"status":"ok"');
    const backslash = await socketRequest('GET /v1\\assets HTTP/1.1\r\nHost: x\r\nX-API-Key: k\r\nConnection: close\r\n\r\n');
    expect(backslash).toMatch(/^HTTP\/1\.1 404/);
    expect(backslash).toContain('"code":"not_found"');
    const garbage = await socketRequest('BLAH\r\n\r\n');
    expect(garbage).toMatch(/^HTTP\/1\.1 400/);
    expect(garbage).toContain('"code":"bad_parameter"');
  });

  it('answers `*` and CONNECT with the JSON error vocabulary, not an empty 400 or silence', async () => {
    const star = await socketRequest('GET * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(star).toMatch(/^HTTP\/1\.1 404/);
    expect(star).toContain('"code":"not_found"');
    const options = await socketRequest('OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(options).toMatch(/^HTTP\/1\.1 405/);
    const tunnel = await socketRequest('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    expect(tunnel).toMatch(/^HTTP\/1\.1 405 Method Not Allowed\r\nAllow: GET, HEAD\r\n/);
    expect(tunnel).toContain('"code":"method_not_allowed"');
  });

  it('routes by the request target alone: any Host, an absolute target, none that names no path', async () => {
    const health = await socketRequest('GET /v1/health HTTP/1.1\r\nHost: not a host/at all\r\nConnection: close\r\n\r\n');
    expect(health).toMatch(/^HTTP\/1\.1 200/);
    const absolute = await socketRequest('GET http://elsewhere.example/v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(absolute).toMatch(/^HTTP\/1\.1 200/);
    // A leading `//` is a path here, not another host.
    const doubled = await socketRequest('GET //elsewhere.example/v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(doubled).toMatch(/^HTTP\/1\.1 404/);
    for (const target of ['ftp://elsewhere.example/v1/health', 'http://[broken/v1/health']) {
      const refused = await socketRequest(`GET ${target} HTTP/1.1\r\nHost: x\r\nX-Request-Id: probe-1\r\nConnection: close\r\n\r\n`);
      expect(refused, target).toMatch(/^HTTP\/1\.1 400/);
      expect(refused, target).toContain('X-Request-Id: probe-1');
      expect(refused, target).toContain('"message":"The request target is not a path of this API"');
    }
  });

  /** One access-log line, or a message. */
  type LogLine = { msg: string; status?: number; code?: string; method?: string; request_id?: string };
  /** A server logging to a file of its own, and what it logged once `requests` access lines are there. */
  async function loggingServer(name: string) {
    const logFile = join(root, name);
    const logger = createLogger('info', logFile);
    const s = await startServer({ publicDir: out, keysFile: KEYS_FILE, port: 0, watchMs: 0, logger });
    const logged = async (requests: number): Promise<LogLine[]> =>
      (await until(() => {
        logger.flush();
        const parsed = (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as LogLine);
        return parsed.filter((l) => l.msg === 'request').length >= requests ? parsed : null;
      }))!;
    const close = () => new Promise<void>((r) => s.server.close(() => r()));
    return { url: new URL(s.url), logged, close };
  }

  it('logs a line for each request refused before the handler (bad HTTP, CONNECT), as for any other', async () => {
    const { url, logged, close } = await loggingServer('access.log');
    try {
      const send = (text: string) =>
        new Promise<void>((resolve) => {
          const socket = connect(Number(url.port), url.hostname, () => socket.write(text));
          socket.on('data', () => {});
          socket.on('close', () => resolve());
        });
      await send('BLAH\r\n\r\n');
      await send('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
      const lines = await logged(2);
      for (const l of lines.filter((x) => x.msg === 'request')) expect(l.request_id).toMatch(/^[0-9a-f-]{36}$/);
      expect(lines.filter((l) => l.msg === 'request').map((l) => [l.method, l.status, l.code])).toEqual([
        ['', 400, 'bad_parameter'],
        ['CONNECT', 405, 'method_not_allowed'],
      ]);
    } finally {
      await close();
    }
  });

  it('says a request that did not arrive in time was too slow, not that it was bad HTTP', async () => {
    const s = await startServer({ publicDir: out, keysFile: KEYS_FILE, port: 0, watchMs: 0 });
    const url = new URL(s.url);
    const accepted = new Promise<Socket>((r) => s.server.once('connection', r));
    // Headers begun and never ended.
    const client = connect(Number(url.port), url.hostname, () => client.write('GET /v1/health HTTP/1.1\r\nHost: x\r\n'));
    try {
      let answer = '';
      client.on('data', (d) => (answer += String(d)));
      const closed = new Promise((r) => client.once('close', r));
      // Node looks for requests past their time every 30 s: the error it raises then, raised now on that socket.
      s.server.emit('clientError', Object.assign(new Error('Request Timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), await accepted);
      await closed;
      expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
      expect(answer).toContain('"The request did not arrive in time: its headers within 60 s, all of it within 300 s"');
    } finally {
      client.destroy();
      await new Promise<void>((r) => s.server.close(() => r()));
    }
  });

  it('closes a connection it refused before the handler, even when the client never closes its side', async () => {
    const s = await startServer({ publicDir: out, keysFile: KEYS_FILE, port: 0, watchMs: 0 });
    const url = new URL(s.url);
    // A client that keeps its side open whatever it is sent (a slow-loris past the header timeout does the same).
    const client = connect({ port: Number(url.port), host: url.hostname, allowHalfOpen: true }, () => client.write('BLAH\r\n\r\n'));
    try {
      let answer = '';
      client.on('data', (d) => (answer += String(d)));
      await new Promise((r) => client.once('end', r));
      expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
      const open = () => new Promise<number>((r) => s.server.getConnections((_e, n) => r(n)));
      expect(await until(async () => (await open()) === 0, 5_000, 20)).toBe(true);
    } finally {
      client.destroy();
      await new Promise<void>((r) => s.server.close(() => r()));
    }
  });

  it('a webhook body its client stops sending is its refusal: no stack in the log, no store failure', async () => {
    const { url, logged, close } = await loggingServer('cut-short.log');
    try {
      await new Promise<void>((resolve) => {
        const socket = connect(Number(url.port), url.hostname, () => {
          socket.write(
            `POST /v1/webhooks HTTP/1.1\r\nHost: x\r\nX-API-Key: ${KEY.pro}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"url":`,
          );
          setTimeout(() => socket.destroy(), 200);
        });
        socket.on('error', () => {});
        socket.on('close', () => resolve());
      });
      const lines = await logged(1);
      expect(lines.filter((l) => l.msg === 'request').map((l) => [l.status, l.code])).toEqual([[400, 'bad_parameter']]);
      expect(lines.filter((l) => l.msg !== 'request')).toEqual([]);
    } finally {
      await close();
    }
  });

  it('answers 502 upstream_error when a file the manifest lists has vanished from disk', async () => {
    const full = join(out, 'v1/assets/AERO/history/full.json');
    renameSync(full, full + '.gone');
    try {
      const res = await call('/v1/assets/AERO/history?limit=2', { headers: { 'X-API-Key': KEY.pro } });
      expect(res.status).toBe(502);
      expect((await res.json()).error.code).toBe('upstream_error');
    } finally {
      renameSync(full + '.gone', full);
    }
  });

  it('refuses to start on a manifest entry that is no size and hash, naming it', async () => {
    const odd = copiedTree(join(root, 'odd-manifest'));
    const file = join(odd, 'v1', '_manifest.json');
    const m = JSON.parse(readFileSync(file, 'utf8'));
    m.files['assets/BTC/risk.json'] = null;
    writeFileSync(file, JSON.stringify(m));
    await expect(startServer({ publicDir: odd, port: 0, watchMs: 0 })).rejects.toThrow(
      /_manifest\.json: files\["assets\/BTC\/risk\.json"\] is not a size and a sha256; build the tree again$/,
    );
  });

  it('answers 503 when started without a key store', async () => {
    const s = await startServer({ publicDir: out, port: 0, watchMs: 0 });
    try {
      const res = await fetch(`${s.url}/v1/assets`, { headers: { 'X-API-Key': KEY.pro } });
      expect(res.status).toBe(503);
      expect((await fetch(`${s.url}/v1/health`)).status).toBe(200);
    } finally {
      await new Promise<void>((r) => s.server.close(() => r()));
    }
  });
});

describe('Node server: the access log in a file, as serve writes it under a process manager', () => {
  it("writes every request's line, in order with its own warnings, those still batched at SIGTERM included", async () => {
    const keys = join(root, 'log-keys.json');
    copyFileSync(KEYS_FILE, keys);
    const logFile = join(root, 'serve.log');
    const fd = openSync(logFile, 'w');
    const port = await new Promise<number>((resolve) => {
      const s = createNetServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const serve = spawn(process.execPath, [BIN, 'serve', '--public', out, '--keys', keys, '--quotas', 'memory', '--port', String(port)], {
      stdio: ['ignore', fd, 'pipe'],
    });
    closeSync(fd);
    try {
      await new Promise<void>((resolve, reject) => {
        serve.stderr!.on('data', (d) => String(d).includes('serving') && resolve());
        serve.on('exit', (code) => reject(new Error(`serve exited ${code}`)));
      });
      const get = async (i: number) => {
        const res = await fetch(`http://127.0.0.1:${port}/v1/assets/BTC/risk`, {
          headers: { 'X-API-Key': KEY.ultra, 'X-Request-Id': `req-${i}` },
        });
        await res.arrayBuffer();
      };
      // Enough lines for several batches, a warning (the key file reloaded) among them, and the last few pending.
      for (let i = 0; i < 150; i++) await get(i);
      writeFileSync(keys, readFileSync(KEYS_FILE, 'utf8') + '\n');
      expect(await until(() => readFileSync(logFile, 'utf8').includes('keys: reloaded'))).toBe(true);
      for (let i = 150; i < 200; i++) await get(i);
    } finally {
      serve.kill('SIGTERM');
      await new Promise((r) => serve.once('exit', r));
    }
    const lines = readFileSync(logFile, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { msg: string; request_id?: string; credential?: string });
    const requests = lines.filter((l) => l.msg === 'request');
    expect(requests.map((l) => l.request_id)).toEqual(Array.from({ length: 200 }, (_, i) => `req-${i}`));
    expect(requests.every((l) => l.credential?.startsWith('key:') && !JSON.stringify(l).includes(KEY.ultra))).toBe(true);
    // The warning sits where it happened: after every request before the reload, before every one after it.
    const reload = lines.findIndex((l) => l.msg.startsWith('keys: reloaded'));
    expect(lines.slice(0, reload).filter((l) => l.msg === 'request')).toHaveLength(150);
  });

  it('writes a field that needs escaping as JSON escaped, and every other field as it is', async () => {
    const logFile = join(root, 'escaped.log');
    const logger = createLogger('info', logFile);
    const odd = 'ftp://x"y\\z\n\u00e9\u2028';
    const event = {
      request_id: 'id-1',
      route: 'none',
      status: 400,
      plan: null,
      credential: null,
      code: 'bad_parameter' as const,
      bytes: 1,
      ms: 0,
    };
    logAccess(logger, { ...event, method: 'GET', path: odd });
    logAccess(logger, { ...event, method: 'GET', path: '/v1/assets/BRK.B/risk' });
    logger.flush();
    const lines = await until(() => {
      const text = existsSync(logFile) ? readFileSync(logFile, 'utf8') : '';
      return text.split('\n').length > 2 ? text.trim().split('\n') : null;
    });
    expect(lines!.map((l) => JSON.parse(l).path)).toEqual([odd, '/v1/assets/BRK.B/risk']);
    expect(lines![1]).toContain('"path":"/v1/assets/BRK.B/risk"');
  });
});

describe('Node server: a rebuild underneath', () => {
  it('reloads the tree when a build swaps v1/ and answers with the new readings and ETags', async () => {
    // Its own copy: the other tests here read the three-day tree, in whatever order they run.
    const own = copiedTree(join(root, 'rebuild'));
    const s = await startServer({ publicDir: own, keysFile: KEYS_FILE, port: 0, watchMs: 50 });
    try {
      const before = await fetch(`${s.url}/v1/assets/BTC/risk`, { headers: { 'X-API-Key': KEY.ultra } });
      const etag = before.headers.get('etag');
      expect((await before.json()).as_of).toBe('2026-10-15T23:58:00Z');
      const pages = join(root, 'day4');
      await smallSite(pages, 4);
      await buildSmall(pages, own, { now: '2026-10-17T00:30:00Z' });
      // The server notices the swap within its watch interval; ask until it answers with the new tree.
      const after = await until(async () => {
        const res = await fetch(`${s.url}/v1/assets/BTC/risk`, { headers: { 'X-API-Key': KEY.ultra } });
        return res.headers.get('etag') !== etag && { etag: res.headers.get('etag'), as_of: (await res.json()).as_of };
      });
      expect(after).toMatchObject({ as_of: '2026-10-16T23:58:00Z' });
      expect(after && after.etag).not.toBe(etag);
    } finally {
      await new Promise<void>((r) => s.server.close(() => r()));
    }
  });
});

describe('Node server: metrics (prom-client on --metrics-port)', () => {
  it("counts requests by route and status, quota refusals, and reports the tree's age", async () => {
    let t = Date.UTC(2026, 9, 16, 12);
    const s = await startServer({ publicDir: out, keysFile: KEYS_FILE, port: 0, watchMs: 0, metricsPort: 0, now: () => t });
    try {
      for (let i = 0; i < 6; i++) await (await fetch(`${s.url}/v1/assets/BTC/risk`, { headers: { 'X-API-Key': KEY.basic } })).arrayBuffer();
      await (await fetch(`${s.url}/v1/nope`)).arrayBuffer();
      t += 1;
      const text = await (await fetch(s.metricsUrl!)).text();
      expect(text).toContain('risk_readings_requests_total{route="risk",status="200"} 5');
      expect(text).toContain('risk_readings_requests_total{route="risk",status="429"} 1');
      expect(text).toContain('risk_readings_requests_total{route="none",status="404"} 1');
      expect(text).toContain('risk_readings_quota_refusals_total{plan="basic",code="rate_limited"} 1');
      expect(text).toMatch(/risk_readings_request_duration_seconds_count\{route="risk"\} 6/);
      expect(Number(/^risk_readings_tree_age_seconds (\S+)$/m.exec(text)![1])).toBeGreaterThan(0);
      expect(text).toMatch(/risk_readings_reloads_total/);
      expect((await fetch(s.metricsUrl!.replace('/metrics', '/other'))).status).toBe(404);
    } finally {
      await new Promise<void>((r) => s.server.close(() => r()));
    }
  });
});
