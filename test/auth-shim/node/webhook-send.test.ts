/**
 * One webhook delivery attempt against real receivers on 127.0.0.1: what each kind of answer (or none) becomes,
 * that a redirect is not followed, that a hung, resetting, refusing or flooding receiver still gives a result within
 * the deadline and leaves no socket or timer behind, and that the forgery rules hold on the address actually
 * connected to (an injected resolver stands in for DNS). Time is bounded only through `timeoutMs`; every wait is
 * for an event, so a loaded machine is slower, not failing.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sendWebhook, type Resolve, type SendOptions } from '../../../auth-shim/node/webhook-send.js';
import type { SendResult } from '../../../auth-shim/webhooks/deliverer.js';
import type { AddressPolicy } from '../../../auth-shim/webhooks/address.js';
import { until } from '../../helpers.js';
import { freePort } from '../../services.js';

const LOOPBACK: AddressPolicy = { allowLoopback: true };
const SIGNATURE = 'v1,c2lnbmF0dXJlLXRoYXQtbXVzdC1uZXZlci1iZS1sb2dnZWQ=';
const HEADERS = {
  'content-type': 'application/json',
  'webhook-id': 'msg_2x9',
  'webhook-timestamp': '1760443200',
  'webhook-signature': SIGNATURE,
};
const BODY = JSON.stringify({ type: 'readings.changed', secretish: 'body-text-never-in-errors' });

interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** Every server a test starts; each must close without its connections being forced (none left open). */
const servers: (Server | TcpServer)[] = [];

/** Whether `server` closes on its own: it waits for every connection, so one the sender left open keeps it. */
const closes = (server: Server | TcpServer): Promise<boolean> =>
  new Promise((resolve) => {
    const stuck = setTimeout(() => resolve(false), 60_000);
    server.close(() => {
      clearTimeout(stuck);
      resolve(true);
    });
  });

afterEach(async () => {
  const open = servers.splice(0);
  const closed = await Promise.all(open.map(closes));
  for (const s of open) if ('closeAllConnections' in s) s.closeAllConnections();
  expect(closed, 'a connection the sender opened was left open').toEqual(open.map(() => true));
});

async function listening<S extends Server | TcpServer>(server: S): Promise<{ server: S; port: number }> {
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { server, port: (server.address() as AddressInfo).port };
}

/** An HTTP receiver on 127.0.0.1 that records each request (as it arrives, its body once read) and answers it. */
async function receiver(answer: (req: IncomingMessage, res: ServerResponse) => void = (_, res) => res.end('ok')) {
  const requests: Received[] = [];
  const { port } = await listening(
    createServer((req, res) => {
      const r: Received = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: '' };
      requests.push(r);
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        r.body = Buffer.concat(chunks).toString('utf8');
        answer(req, res);
      });
    }),
  );
  return { port, url: `http://127.0.0.1:${port}`, requests };
}

/** A TCP listener on 127.0.0.1 that counts connections: zero proves the sender never connected. */
async function tcpCounter() {
  const seen = { connections: 0 };
  const { port } = await listening(
    createTcpServer((socket) => {
      seen.connections++;
      socket.destroy();
    }),
  );
  return { port, seen };
}

/** A resolver answering `answers` in turn (the last one again once they run out), recording what it was asked. */
function resolver(...answers: string[][]): Resolve & { asked: string[] } {
  const asked: string[] = [];
  const resolve = async (host: string) => {
    asked.push(host);
    const list = answers[Math.min(asked.length, answers.length) - 1]!;
    return list.map((address) => ({ address, family: address.includes(':') ? (6 as const) : (4 as const) }));
  };
  return Object.assign(resolve, { asked });
}

/** sendWebhook with the test's headers and body, holding every result to the shape and the no-secrets rule. */
async function send(url: string, o: SendOptions, headers: Record<string, string> = HEADERS, body = BODY): Promise<SendResult> {
  const r = await sendWebhook(url, headers, body, o);
  expect(Object.keys(r).sort()).toEqual(['error', 'ms', 'retryAfterMs', 'status']);
  expect(Number.isInteger(r.ms) && r.ms >= 0).toBe(true);
  expect(r.error === null).toBe(r.status !== null && r.status >= 200 && r.status < 300);
  expect(r.error ?? '').not.toContain(SIGNATURE);
  expect(r.error ?? '').not.toContain('body-text-never-in-errors');
  return r;
}

describe('answers', () => {
  it('a 2xx is a success, and the request carries exactly the given headers and body', async () => {
    const rx = await receiver((_, res) => res.writeHead(204).end());
    const r = await send(`${rx.url}/hooks/risk?tenant=7`, { policy: LOOPBACK });
    expect(r).toMatchObject({ status: 204, error: null, retryAfterMs: null });
    expect(rx.requests).toHaveLength(1);
    const [got] = rx.requests;
    expect(got!.method).toBe('POST');
    expect(got!.url).toBe('/hooks/risk?tenant=7');
    expect(got!.body).toBe(BODY);
    for (const [name, value] of Object.entries(HEADERS)) expect(got!.headers[name]).toBe(value);
    // Besides the given headers, only what HTTP/1.1 needs: the host, the body's length, and no keep-alive.
    expect(Object.keys(got!.headers).sort()).toEqual([...Object.keys(HEADERS), 'connection', 'content-length', 'host'].sort());
    expect(got!.headers['content-length']).toBe(String(Buffer.byteLength(BODY)));
    expect(got!.headers.connection).toBe('close');
    expect(got!.headers.host).toBe(`127.0.0.1:${rx.port}`);
  });

  it('a 200 is a success', async () => {
    const rx = await receiver((_, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('thanks'));
    expect(await send(`${rx.url}/`, { policy: LOOPBACK })).toMatchObject({ status: 200, error: null, retryAfterMs: null });
  });

  it.each([500, 410, 400, 429])('a %i is a failure naming the status', async (status) => {
    const rx = await receiver((_, res) => res.writeHead(status).end('no'));
    expect(await send(`${rx.url}/`, { policy: LOOPBACK })).toMatchObject({
      status,
      error: `127.0.0.1 answered ${status}`,
      retryAfterMs: null,
    });
  });

  it('a redirect is not followed: a failure naming where it pointed, and its target gets nothing', async () => {
    const target = await receiver();
    const rx = await receiver((_, res) => res.writeHead(302, { location: `${target.url}/elsewhere` }).end());
    expect(await send(`${rx.url}/`, { policy: LOOPBACK })).toMatchObject({
      status: 302,
      error: `redirect to ${target.url}/elsewhere not followed`,
    });
    expect(rx.requests).toHaveLength(1);
    expect(target.requests).toHaveLength(0);
  });

  it("a redirect's location is cut to 200 characters in the error, and one without a location is named by status", async () => {
    const long = `https://elsewhere.example/${'x'.repeat(500)}`;
    const rx = await receiver((req, res) =>
      req.url === '/long' ? res.writeHead(307, { location: long }).end() : res.writeHead(308).end(),
    );
    expect((await send(`${rx.url}/long`, { policy: LOOPBACK })).error).toBe(`redirect to ${long.slice(0, 200)}… not followed`);
    expect((await send(`${rx.url}/none`, { policy: LOOPBACK })).error).toBe('a 308 redirect, not followed');
  });

  it.each([
    ['120', 120_000],
    ['0', 0],
    [' 5 ', 5_000],
    ['soon', null],
    ['-5', null],
    ['1.5', null],
    ['Sun, 06 Nov 1994 08:49:37 GMT', 0], // a date past: retry now, never a negative delay
    ['Sunday, 06-Nov-94 08:49:37 GMT', 0],
    ['Sun Nov  6 08:49:37 1994', 0],
    ['Sun, 31 Feb 2094 08:49:37 GMT', null], // no such day
  ])('a 503 with Retry-After %j gives retryAfterMs %j', async (value, ms) => {
    const rx = await receiver((_, res) => res.writeHead(503, { 'retry-after': value }).end());
    expect(await send(`${rx.url}/`, { policy: LOOPBACK })).toMatchObject({
      status: 503,
      error: '127.0.0.1 answered 503',
      retryAfterMs: ms,
    });
  });

  it('a Retry-After HTTP-date ahead gives the delay until it', async () => {
    const at = new Date(Date.now() + 3_600_000).toUTCString();
    const rx = await receiver((_, res) => res.writeHead(503, { 'retry-after': at }).end());
    const r = await send(`${rx.url}/`, { policy: LOOPBACK });
    // Up to an hour: the date has whole seconds and some time passes before the answer is read.
    expect(r.retryAfterMs).toBeGreaterThan(3_000_000);
    expect(r.retryAfterMs).toBeLessThanOrEqual(3_600_000);
  });
});

describe('receivers that misbehave still give a result within the deadline', () => {
  it('one that never answers: no status, and an error naming the timeout', async () => {
    const rx = await receiver(() => {});
    const r = await send(`${rx.url}/`, { policy: LOOPBACK, timeoutMs: 300 });
    expect(r).toMatchObject({ status: null, error: 'no answer within 300 ms (timeout)', retryAfterMs: null });
    expect(rx.requests).toHaveLength(1);
  });

  it('one that sends its status and then stalls its body: the status stands', async () => {
    const rx = await receiver((_, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('partial');
    });
    expect(await send(`${rx.url}/`, { policy: LOOPBACK, timeoutMs: 300 })).toMatchObject({ status: 200, error: null });
  });

  it('a 10 MB answer: it is judged by its status', async () => {
    const big = Buffer.alloc(10 * 1024 * 1024, 'a');
    const rx = await receiver((_, res) => res.writeHead(200, { 'content-length': big.length }).end(big));
    expect(await send(`${rx.url}/`, { policy: LOOPBACK })).toMatchObject({ status: 200, error: null });
    const failing = await receiver((_, res) => res.writeHead(500, { 'content-length': big.length }).end(big));
    expect(await send(`${failing.url}/`, { policy: LOOPBACK })).toMatchObject({ status: 500, error: '127.0.0.1 answered 500' });
  });

  it('an answer that never ends: the connection is dropped once 64 KB are read, long before the deadline', async () => {
    let written = 0;
    let dropped!: () => void;
    const gone = new Promise<void>((r) => (dropped = r));
    const rx = await receiver((_, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(16 * 1024, 'a');
      const more = (): void => {
        while (!res.destroyed && res.write(chunk)) written += chunk.length;
      };
      res.on('drain', more);
      res.on('close', dropped);
      more();
    });
    // A deadline far off: only the byte cap can end this attempt before it.
    const r = await send(`${rx.url}/`, { policy: LOOPBACK, timeoutMs: 300_000 });
    expect(r).toMatchObject({ status: 200, error: null });
    expect(r.ms).toBeLessThan(300_000);
    await gone; // the receiver sees its connection closed
    expect(written).toBeGreaterThan(0);
  });

  it('the byte cap is an option', async () => {
    const rx = await receiver((_, res) => {
      res.writeHead(502);
      res.write(Buffer.alloc(4096, 'a')); // never ended
    });
    expect(await send(`${rx.url}/`, { policy: LOOPBACK, timeoutMs: 300_000, maxBytes: 1024 })).toMatchObject({
      status: 502,
      error: '127.0.0.1 answered 502',
    });
  });

  it('one that resets the connection: no status, and an error naming it', async () => {
    const { port } = await listening(createTcpServer((socket) => socket.resetAndDestroy()));
    const r = await send(`http://127.0.0.1:${port}/`, { policy: LOOPBACK, timeoutMs: 60_000 });
    expect(r).toMatchObject({ status: null, retryAfterMs: null });
    expect(r.error).toMatch(/^connection to 127\.0\.0\.1(:\d+)? closed or reset before an answer$/);
  });

  it('one that closes without answering: no status', async () => {
    const rx = await receiver((req) => req.socket.end());
    const r = await send(`${rx.url}/`, { policy: LOOPBACK, timeoutMs: 60_000 });
    expect(r).toMatchObject({ status: null, error: 'connection to 127.0.0.1 closed or reset before an answer' });
  });

  it('one that answers what is not HTTP: no status', async () => {
    // It reads what comes (as a real server would), so it sees the sender hang up.
    const { port } = await listening(createTcpServer((socket) => socket.resume().end('SSH-2.0-OpenSSH_9.6\r\n\r\n')));
    const r = await send(`http://127.0.0.1:${port}/`, { policy: LOOPBACK, timeoutMs: 60_000 });
    expect(r.status).toBeNull();
    expect(r.error).toMatch(/^the answer from 127\.0\.0\.1 is not valid HTTP \(HPE_[A-Z_]+\)$/);
  });

  it('a refused port: no status, and an error naming the address', async () => {
    const port = await freePort();
    expect(await send(`http://127.0.0.1:${port}/`, { policy: LOOPBACK })).toMatchObject({
      status: null,
      error: `connection refused by 127.0.0.1:${port}`,
      retryAfterMs: null,
    });
  });

  it('no timer is left behind: a far deadline does not outlive its attempt', async () => {
    const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    const port = await freePort();
    await send(`http://127.0.0.1:${port}/`, { policy: LOOPBACK, timeoutMs: 600_000 });
    const rx = await receiver();
    await send(`${rx.url}/`, { policy: LOOPBACK, timeoutMs: 600_000 });
    expect(await until(() => timers() <= before, 30_000)).toBe(true);
  });

  it('a header Node cannot send is refused without quoting it', async () => {
    const rx = await receiver();
    const r = await send(`${rx.url}/`, { policy: LOOPBACK }, { ...HEADERS, 'webhook-signature': `${SIGNATURE}\r\nx-injected: 1` });
    expect(r).toMatchObject({ status: null, error: 'the request could not be made: a header name or value is not valid HTTP' });
    expect(rx.requests).toHaveLength(0);
  });
});

describe('no request forgery: the address connected to is checked, at each delivery', () => {
  it('a name resolving to a private address is refused, even with loopback allowed', async () => {
    const resolve = resolver(['10.0.0.1']);
    expect(await send('http://hook.example/', { policy: LOOPBACK, resolve })).toMatchObject({
      status: null,
      error: 'hook.example resolves to 10.0.0.1, a private address: refused',
    });
    expect(resolve.asked).toEqual(['hook.example']);
  });

  it('a name resolving to the cloud metadata address is refused', async () => {
    const resolve = resolver(['169.254.169.254']);
    expect((await send('http://metadata.example/latest', { policy: LOOPBACK, resolve })).error).toBe(
      'metadata.example resolves to 169.254.169.254, a link-local address (a cloud metadata service): refused',
    );
  });

  it('a name resolving to loopback is refused unless loopback is allowed: the receiver there sees no connection', async () => {
    const { port, seen } = await tcpCounter();
    const policy: AddressPolicy = { allowLoopback: false, ports: [port] };
    const resolve = resolver(['127.0.0.1']);
    const r = await send(`https://hook.example:${port}/`, { policy, resolve });
    expect(r).toMatchObject({
      status: null,
      error:
        'hook.example resolves to 127.0.0.1, a loopback address, allowed only when the operator allows loopback (--webhooks-allow-loopback): refused',
    });
    expect(resolve.asked).toEqual(['hook.example']);
    expect(seen.connections).toBe(0);
  });

  it('a name resolving to an IPv4-mapped loopback address is refused, and nothing is connected to', async () => {
    const { port, seen } = await tcpCounter();
    const resolve = resolver(['::ffff:127.0.0.1']);
    const r = await send(`https://hook.example:${port}/`, { policy: { allowLoopback: false, ports: [port] }, resolve });
    expect(r.error).toBe(
      'hook.example resolves to ::ffff:127.0.0.1, an IPv4-mapped address (of 127.0.0.1, a loopback address), refused whatever it maps to: refused',
    );
    expect(seen.connections).toBe(0);
  });

  it('a name resolving to several addresses is refused when any is not public: the good one is not picked', async () => {
    const rx = await receiver();
    const resolve = resolver(['127.0.0.1', '10.0.0.1']);
    expect((await send(`http://hook.example:${rx.port}/`, { policy: LOOPBACK, resolve })).error).toBe(
      'hook.example resolves to 10.0.0.1, a private address: refused',
    );
    expect(rx.requests).toHaveLength(0);
    const mixed = resolver(['93.184.215.14', '192.168.0.10']);
    expect((await send('https://hook.example/', { policy: { allowLoopback: false }, resolve: mixed })).error).toBe(
      'hook.example resolves to 192.168.0.10, a private address: refused',
    );
  });

  it('rebinding: a name that resolved to an allowed address and now resolves to a private one is refused now', async () => {
    const rx = await receiver();
    const resolve = resolver(['127.0.0.1'], ['10.0.0.1']);
    expect(await send(`http://hook.example:${rx.port}/`, { policy: LOOPBACK, resolve })).toMatchObject({ status: 200, error: null });
    expect(await send(`http://hook.example:${rx.port}/`, { policy: LOOPBACK, resolve })).toMatchObject({
      status: null,
      error: 'hook.example resolves to 10.0.0.1, a private address: refused',
    });
    expect(resolve.asked).toEqual(['hook.example', 'hook.example']);
    expect(rx.requests).toHaveLength(1);
    // The request went to the address resolved, under the name the URL gave.
    expect(rx.requests[0]!.headers.host).toBe(`hook.example:${rx.port}`);
  });

  it('an IP-literal host is judged without a lookup', async () => {
    const resolve = resolver(['127.0.0.1']);
    expect((await send('http://10.0.0.1/', { policy: LOOPBACK, resolve })).error).toBe('the host 10.0.0.1 is a private address: refused');
    expect((await send('http://2852039166/', { policy: LOOPBACK, resolve })).error).toBe(
      'the host 169.254.169.254 is a link-local address (a cloud metadata service): refused',
    );
    expect(resolve.asked).toEqual([]);
  });

  it('a URL the rules refuse is not sent', async () => {
    const rx = await receiver();
    expect((await send(`${rx.url}/`, { policy: { allowLoopback: false } })).error).toMatch(/^the scheme is http: a webhook URL is https/);
    expect((await send('https://u:p@hook.example/', { policy: LOOPBACK })).error).toBe(
      'the URL carries a user name or password, which a webhook does not send',
    );
    expect(rx.requests).toHaveLength(0);
  });

  it('a name that does not resolve, or resolves to nothing, is a failure naming it', async () => {
    const missing: Resolve = () => Promise.reject(Object.assign(new Error('getaddrinfo ENOTFOUND nope.example'), { code: 'ENOTFOUND' }));
    expect(await send('http://nope.example/', { policy: LOOPBACK, resolve: missing })).toMatchObject({
      status: null,
      error: 'nope.example does not resolve (ENOTFOUND)',
    });
    expect((await send('http://empty.example/', { policy: LOOPBACK, resolve: resolver([]) })).error).toBe(
      'empty.example resolves to no address',
    );
    const broken: Resolve = () => {
      throw new TypeError('resolver bug');
    };
    expect((await send('http://broken.example/', { policy: LOOPBACK, resolve: broken })).error).toBe(
      'resolving broken.example failed (unknown error)',
    );
  });

  it('a resolver that answers after the deadline: the timeout stands, and the late answer connects nowhere', async () => {
    const rx = await receiver();
    let answer: ((a: { address: string; family: 4 }[]) => void) | undefined;
    let asked!: () => void;
    const wasAsked = new Promise<void>((r) => (asked = r));
    const slow: Resolve = () => {
      asked();
      return new Promise((r) => (answer = r));
    };
    const r = await send(`http://slow.example:${rx.port}/`, { policy: LOOPBACK, resolve: slow, timeoutMs: 300 });
    expect(r).toMatchObject({ status: null, error: 'no answer within 300 ms (timeout)' });
    await wasAsked;
    answer?.([{ address: '127.0.0.1', family: 4 }]);
    // Turns of the event loop for the late answer to connect, were it wrongly able to (this can only miss a fault).
    await new Promise((r) => setTimeout(r, 50));
    expect(rx.requests).toHaveLength(0);
  });
});

// A certificate for localhost made here by openssl; without openssl these are skipped, with the reason.
const tls = (() => {
  const dir = mkdtempSync(join(tmpdir(), 'rr-webhook-tls-'));
  const r = spawnSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '2',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
    ],
    { encoding: 'utf8', timeout: 60_000 },
  );
  if (r.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    return { skip: `openssl could not make a certificate (${r.error?.message ?? r.stderr.trim()})` } as const;
  }
  const pair = { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) };
  rmSync(dir, { recursive: true, force: true });
  return { skip: null, ...pair } as const;
})();

describe.skipIf(tls.skip !== null)(`https (skipped: ${tls.skip ?? 'openssl made a certificate'})`, () => {
  it('a certificate the system does not trust is a TLS failure; SNI is the host name without its root dot', async () => {
    const names: string[] = [];
    const server = createTlsServer({
      key: tls.skip === null ? tls.key : '',
      cert: tls.skip === null ? tls.cert : '',
      SNICallback: (name, cb) => {
        names.push(name);
        cb(null, undefined);
      },
    });
    const requests: string[] = [];
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      requests.push(req.url ?? '');
      res.end();
    });
    server.on('tlsClientError', () => {}); // the sender hangs up on the self-signed certificate
    const { port } = await listening(server);
    const resolve = resolver(['127.0.0.1']);
    const r = await send(`https://localhost.:${port}/hook`, { policy: LOOPBACK, resolve });
    expect(r.status).toBeNull();
    expect(r.error).toMatch(/^TLS with localhost\. failed: self[- ]signed certificate/);
    expect(resolve.asked).toEqual(['localhost.']);
    expect(names).toEqual(['localhost']);
    expect(requests).toEqual([]);
  });
});
