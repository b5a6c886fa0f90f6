/**
 * Browsers, where the operator allows them (decision 105), in a real browser: headless Chromium (Debian's, driven by
 * playwright-core, as docs-browser.test.ts) opens a page served from another loopback port than the Node server's,
 * whose script calls the API with a key. On the origin the server allows (`corsOrigins`, as `serve --cors-origin`
 * sets it), the script reads the data, where its quota stands from the exposed headers, revalidates with the ETag
 * (an If-None-Match set by the script bypasses the browser's cache, so it sees the 304 itself), and reads a 429's
 * Retry-After; its preflights reach the server and count toward no window. On another origin the browser refuses
 * every answer but the public ones: the script's fetch rejects with a TypeError.
 */
import { createServer, type Server } from 'node:http';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer } from '../../auth-shim/node/server.js';
import { CHROMIUM, chromiumFor, launchChromium } from './chromium.js';
import { KEY, KEYS_FILE, builtTree } from './tree.js';

const present = chromiumFor('cors-browser');

/** The page's script: one scenario per `mode`, its outcome written into #result as JSON. */
const SCRIPT = `
const q = new URLSearchParams(location.search);
const api = q.get('api') + '/v1/assets/BTC/risk';
const key = { 'X-API-Key': q.get('key') };
const quota = ['ETag', 'RateLimit-Remaining', 'RateLimit-Policy', 'RateLimit', 'X-RateLimit-Requests-Remaining', 'Retry-After', 'X-Request-Id'];
const seen = (res) => Object.fromEntries(quota.map((n) => [n, res.headers.get(n)]));

async function allowed() {
  // no-store: each call reaches the server, as a dashboard polling for fresh numbers does.
  const first = await fetch(api, { headers: key, cache: 'no-store' });
  const symbol = (await first.json()).data.symbol;
  const etag = first.headers.get('ETag');
  const again = await fetch(api, { headers: { ...key, 'If-None-Match': etag } });
  const more = [];
  let limited = null;
  for (let i = 0; i < 10 && !limited; i++) {
    const res = await fetch(api, { headers: key, cache: 'no-store' });
    if (res.status === 429) limited = { status: res.status, code: (await res.json()).error.code, ...seen(res) };
    else more.push(res.status);
  }
  return { first: { status: first.status, symbol, ...seen(first) }, again: { status: again.status, ...seen(again) }, more, limited };
}

async function elsewhere() {
  const tried = {};
  // A key header makes the request need a preflight; a plain GET does not, and its answer is refused all the same.
  for (const [name, init] of [['with a key', { headers: key }], ['plain', {}]]) {
    try {
      tried[name] = 'answered ' + (await fetch(api, init)).status;
    } catch (e) {
      tried[name] = e.name + ': ' + e.message;
    }
  }
  tried.health = (await fetch(q.get('api') + '/v1/health')).status;
  return tried;
}

async function webhooks() {
  // A JSON body (POST, PATCH) and DELETE are no simple requests: each is preflighted on its own route.
  const hooks = q.get('api') + '/v1/webhooks';
  const json = { ...key, 'Content-Type': 'application/json' };
  const made = await fetch(hooks, { method: 'POST', headers: json, body: JSON.stringify({ url: 'https://hooks.example.com/rr', description: 'from a page' }) });
  const id = (await made.json()).data.id;
  const changed = await fetch(hooks + '/' + id, { method: 'PATCH', headers: json, body: JSON.stringify({ description: 'renamed' }) });
  const description = (await changed.json()).data.description;
  const gone = await fetch(hooks + '/' + id, { method: 'DELETE', headers: key });
  const after = await fetch(hooks + '/' + id, { headers: key });
  return { made: made.status, id, changed: changed.status, description, gone: gone.status, after: after.status };
}

const modes = { allowed, elsewhere, webhooks };
modes[q.get('mode')]().then(
  (r) => (document.getElementById('result').textContent = JSON.stringify(r)),
  (e) => (document.getElementById('result').textContent = JSON.stringify({ failed: e.name + ': ' + e.message })),
);
`;
const PAGE = '<!doctype html><meta charset="utf-8"><title>dashboard</title><pre id="result"></pre><script src="/app.js"></script>';

const servers: Server[] = [];
let browser: Browser;
let api = '';
/** What reached the API server: method, path and Origin. */
const reached: { method: string; path: string; origin: string | undefined }[] = [];

/** A page's own server on loopback (its origin is its port): the page and its script. */
async function pageServer(): Promise<string> {
  const s = createServer((req, res) => {
    const script = req.url === '/app.js';
    res.writeHead(200, { 'Content-Type': script ? 'text/javascript; charset=utf-8' : 'text/html; charset=utf-8' });
    res.end(script ? SCRIPT : PAGE);
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  servers.push(s);
  return `http://127.0.0.1:${(s.address() as { port: number }).port}`;
}

let dashboard = '';
let other = '';
beforeAll(async () => {
  if (!present) return;
  [dashboard, other] = [await pageServer(), await pageServer()];
  const s = await startServer({ publicDir: builtTree(), keysFile: KEYS_FILE, port: 0, watchMs: 0, corsOrigins: [dashboard] });
  s.server.on('request', (req) => reached.push({ method: req.method!, path: req.url!, origin: req.headers.origin }));
  servers.push(s.server);
  api = s.url;
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
});

/** Opens `origin`'s page in `mode` with `key`; what its script found. */
async function run(origin: string, mode: 'allowed' | 'elsewhere' | 'webhooks', key: string) {
  const page = await browser.newPage();
  page.setDefaultTimeout(60_000);
  await page.goto(`${origin}/?mode=${mode}&key=${key}&api=${encodeURIComponent(api)}`);
  await page.waitForFunction(() => document.getElementById('result')?.textContent);
  const result = JSON.parse((await page.textContent('#result'))!);
  await page.close();
  return result;
}

describe.skipIf(!present)(`a page calling the API in headless Chromium (${CHROMIUM}), decision 105`, () => {
  it('on an allowed origin: reads the data and its quota, revalidates to a 304, and reads a 429’s Retry-After; preflights count nowhere', async () => {
    const seen = await run(dashboard, 'allowed', KEY.basic);
    expect(seen.failed).toBeUndefined();
    const { first, again, more, limited } = seen;
    expect(first).toMatchObject({ status: 200, symbol: 'BTC', 'RateLimit-Remaining': '4', 'X-RateLimit-Requests-Remaining': '999' });
    expect(first.ETag).toMatch(/^"[0-9a-f]{64}"$/);
    expect(first['RateLimit-Policy']).toMatch(/^"minute";q=5;w=60, "month";q=1000;w=\d+$/);
    expect(first['X-Request-Id']).toMatch(/./);
    // The script set If-None-Match itself: Chromium leaves its cache out and hands the 304 over as it came.
    expect(again).toMatchObject({ status: 304, ETag: first.ETag, 'RateLimit-Remaining': '3', 'X-RateLimit-Requests-Remaining': '999' });
    // Basic takes 5 a minute: three more, then 429. Had a preflight counted, the minute would have been spent sooner.
    expect(more).toEqual([200, 200, 200]);
    expect(limited).toMatchObject({
      status: 429,
      code: 'rate_limited',
      'RateLimit-Remaining': '0',
      'X-RateLimit-Requests-Remaining': '996',
    });
    expect(Number(limited['Retry-After'])).toBeGreaterThan(0);
    expect(Number(limited['Retry-After'])).toBeLessThanOrEqual(60);
    expect(limited.RateLimit).toMatch(/^"minute";r=0;t=\d+, "month";r=996;t=\d+$/);
    // The browser asked first (the key header is not safelisted), and the server answered it.
    const mine = reached.filter((r) => r.origin === dashboard);
    expect(mine.filter((r) => r.method === 'OPTIONS').length).toBeGreaterThanOrEqual(1);
    expect(mine.filter((r) => r.method === 'GET')).toHaveLength(6);
  });

  it('on an allowed origin: creates, changes and deletes a webhook endpoint, each method preflighted on its route', async () => {
    const seen = await run(dashboard, 'webhooks', KEY.ultra);
    expect(seen.failed).toBeUndefined();
    expect(seen).toMatchObject({ made: 201, changed: 200, description: 'renamed', gone: 204, after: 404 });
    const asked = reached.filter((r) => r.origin === dashboard && r.path.startsWith('/v1/webhooks'));
    // Chromium asked before the POST and before the PATCH and DELETE (one preflight may serve both on one path).
    expect(asked.filter((r) => r.method === 'OPTIONS').map((r) => r.path)).toEqual(['/v1/webhooks', `/v1/webhooks/${seen.id}`]);
    expect(asked.filter((r) => r.method !== 'OPTIONS').map((r) => r.method)).toEqual(['POST', 'PATCH', 'DELETE', 'GET']);
  });

  it('on another origin: the browser refuses the answers (fetch rejects with a TypeError), but health stays public', async () => {
    const seen = await run(other, 'elsewhere', KEY.pro);
    expect(seen['with a key']).toMatch(/^TypeError: /);
    expect(seen.plain).toMatch(/^TypeError: /);
    expect(seen.health).toBe(200);
    // The preflight was refused (405, no CORS header), so the request with the key was never sent.
    const theirs = reached.filter((r) => r.origin === other && r.path === '/v1/assets/BTC/risk');
    expect(theirs.map((r) => r.method)).toEqual(['OPTIONS', 'GET']);
  });
});
