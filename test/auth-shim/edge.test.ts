/**
 * The edge entry under workerd (miniflare), bundled and configured as wrangler deploys it: reading the tree over
 * HTTP from a private origin on loopback (it answers only with the edge's token, and the edge sends it nowhere
 * else), with the key store in KV (read at run time), Swagger UI's files in the deployment's static assets and
 * quotas in a Durable Object per credential.
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOCS_FILES } from '../../auth-shim/docs.js';
import { KEYS_REFRESH_MS } from '../../auth-shim/edge-keys.js';
import { revokeKeys } from '../../generator/keys.js';
import { LATE_MS, tempDir, until } from '../helpers.js';
import { startEdge, type Edge } from './edge-setup.js';
import { KEY, KEYS_FILE, builtTree, treeJson } from './tree.js';

let out = '';
let edge: Edge;
/** Another origin (another port), recording the Authorization header of every request that reaches it. */
let elsewhere: Server;
let elsewhereUrl = '';
const reachedElsewhere: (string | undefined)[] = [];
/** What the worker has said on stderr (its log), passed on to the test report too. */
let workerLog = '';
/** How the origin answers a path (under /v1/) instead of serving the tree's file: a redirect, in the tests below. */
const redirects = new Map<string, () => string>();
/** A basic key only the quota test spends: its exhausted minute must not reach the other tests, in any order. */
const QUOTA_KEY = 'rr_edge_quota_test_key';
const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');
const keysJson = () => {
  const store = JSON.parse(readFileSync(KEYS_FILE, 'utf8'));
  store.keys.push({ sha256: sha256Hex(QUOTA_KEY), plan: 'basic', label: 'edge quota test' });
  return JSON.stringify(store);
};

beforeAll(async () => {
  out = builtTree();
  elsewhere = createServer((req, res) => {
    reachedElsewhere.push(req.headers.authorization);
    res.writeHead(200).end(readFileSync(join(out, 'v1', 'assets/BTC/risk.json')));
  });
  await new Promise<void>((r) => elsewhere.listen(0, '127.0.0.1', () => r()));
  elsewhereUrl = `http://127.0.0.1:${(elsewhere.address() as { port: number }).port}`;
  // The production entry itself (wrangler.toml's main), on the real clock.
  edge = await startEdge({
    out,
    keys: keysJson(),
    onStderr: (text) => {
      workerLog += text;
      process.stderr.write(text);
    },
    intercept: (req, res) => {
      const to = redirects.get(req.url!);
      if (!to) return false;
      res.writeHead(302, { location: to() }).end();
      return true;
    },
  });
});

afterAll(async () => {
  await edge?.close();
  elsewhere?.closeAllConnections();
  elsewhere?.close();
});

const call = (path: string, headers: Record<string, string> = {}, method = 'GET') => edge.call(path, { headers, method });

describe('edge entry under workerd', () => {
  // A Workers runtime hands the worker `Accept-Encoding: gzip, br` whatever the client sent, and re-encodes the
  // response for the client itself: the worker sends the build's br variant, the client gets what it accepts.
  const tags = (path: string) => {
    const e = treeJson(out, '_manifest.json').files[path];
    return { identity: `"${e.sha256}"`, br: `"${e.encodings.br.sha256}"`, gzip: `"${e.encodings.gzip.sha256}"` };
  };

  it('answers health keyless and a risk file byte for byte with a manifest ETag', async () => {
    expect((await call('/v1/health')).status).toBe(200);
    const res = await call('/v1/assets/btc/risk', { 'X-API-Key': KEY.ultra, 'Accept-Encoding': 'identity' });
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(readFileSync(join(out, 'v1', 'assets/BTC/risk.json')))).toBe(true);
    expect(Object.values(tags('assets/BTC/risk.json'))).toContain(res.headers.get('etag'));
    expect((await call('/v1/assets/BTC/risk', { 'X-API-Key': KEY.ultra, 'If-None-Match': res.headers.get('etag')! })).status).toBe(304);
  });

  it("sends the build's br variant, read from the origin beside its file, with that variant's ETag", async () => {
    const res = await call('/v1/assets', { 'X-API-Key': KEY.ultra, 'Accept-Encoding': 'br' });
    expect(res.status).toBe(200);
    expect(res.headers.get('etag')).toBe(tags('assets/index.ultra.json').br);
    // The client side decodes the body it was sent: it must be the file itself, not compressed twice.
    expect(Buffer.from(await res.arrayBuffer()).equals(readFileSync(join(out, 'v1', 'assets/index.ultra.json')))).toBe(true);
  });

  it("serves the docs page keyless, and Swagger UI's files from the deployment's static assets with the shim's headers", async () => {
    const page = await call('/docs');
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('/docs/swagger-ui-bundle.js');
    // Decision 24: the page reaches no other host; its files come from this deployment.
    expect(page.headers.get('content-security-policy')).toMatch(/^default-src 'self';/);
    expect(page.headers.get('content-security-policy')).not.toMatch(/https?:|\*/);
    const pkg = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
    for (const name of Object.keys(DOCS_FILES)) {
      const res = await call(`/docs/${name}`, { 'Accept-Encoding': 'identity' });
      expect(res.status, name).toBe(200);
      expect(res.headers.get('content-type')).toBe(DOCS_FILES[name as keyof typeof DOCS_FILES]);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      const bytes = readFileSync(join(pkg, name));
      expect(Buffer.from(await res.arrayBuffer()).equals(bytes), name).toBe(true);
      expect(res.headers.get('etag')).toBe(`"${createHash('sha256').update(bytes).digest('hex')}"`);
      expect((await call(`/docs/${name}`, { 'If-None-Match': res.headers.get('etag')! })).status).toBe(304);
    }
    expect((await call('/docs/index.html')).status).toBe(404);
  });

  it('applies credentials, plans and the error vocabulary', async () => {
    const codes = async (path: string, headers: Record<string, string>, method = 'GET') => {
      const r = await call(path, headers, method);
      return [r.status, r.status === 200 ? 'ok' : ((await r.json()) as { error: { code: string } }).error.code];
    };
    expect(await codes('/v1/assets/BTC/risk', {})).toEqual([401, 'unauthorized']);
    expect(await codes('/v1/assets/SPY/risk', { 'X-API-Key': KEY.basic })).toEqual([403, 'plan_required']);
    expect(await codes('/v1/assets/NOPE/risk', { 'X-API-Key': KEY.ultra })).toEqual([404, 'unknown_asset']);
    expect(await codes('/v1/signals/dca/NVDA', { 'X-API-Key': KEY.ultra })).toEqual([404, 'no_signal']);
    expect(await codes('/v1/assets/BTC/history?limit=0', { 'X-API-Key': KEY.ultra })).toEqual([400, 'bad_parameter']);
    expect(
      await codes('/v1/bulk/risk?symbols=BTC,ETH', {
        'x-marketplace-key': KEY.pro,
        'x-marketplace-host': 'risk-readings.marketplace.example',
      }),
    ).toEqual([200, 'ok']);
    expect(await codes('/v1/assets/BTC/risk', { 'X-API-Key': KEY.ultra }, 'POST')).toEqual([405, 'method_not_allowed']);
    expect(await codes('/v1/nope', { 'X-API-Key': KEY.ultra })).toEqual([404, 'not_found']);
  });

  it('cuts a history page from the ledger read over HTTP', async () => {
    const body = (await (await call('/v1/assets/ETH/history?limit=3&from=2026-01-01', { 'X-API-Key': KEY.ultra })).json()) as {
      data: { rows: unknown[]; next_cursor: string };
    };
    const all = treeJson(out, 'assets/ETH/history/full.json').data.rows.filter((r: { date: string }) => r.date >= '2026-01-01');
    expect(body.data.rows).toEqual(all.slice(0, 3));
    expect(body.data.next_cursor).toBe(all[2].date);
  });

  it("cuts the change feed from its ledger read over HTTP, a basic key's view and a pro key's alike", async () => {
    const ledger = treeJson(out, 'changes/ledger.json') as { events: unknown[]; basic: number[] };
    const page = async (key: string) =>
      ((await (await call('/v1/changes?limit=1000', { 'X-API-Key': key })).json()) as { data: { events: unknown[] } }).data.events;
    expect(await page(KEY.pro)).toEqual(ledger.events);
    expect(await page(KEY.basic)).toEqual(ledger.basic.map((i) => ledger.events[i]).slice(0, 90));
  });

  it("has no operator route without the OPERATOR_TOKEN secret: any token meets the API's own 404 (decision 98)", async () => {
    const notFound = await call('/v1/no-such-route');
    const body = await notFound.text();
    expect(notFound.status).toBe(404);
    const tokens: Record<string, string>[] = [{}, { authorization: 'Bearer anything' }, { authorization: 'Bearer ' }];
    for (const headers of tokens)
      for (const path of ['/_operator/usage', '/_operator/usage?month=2026-10']) {
        const res = await call(path, headers);
        expect(res.status, path).toBe(404);
        expect(await res.text()).toBe(body);
      }
  });

  it('reads a private origin: the origin refuses a request without the token, the edge sends it', async () => {
    const base = `http://127.0.0.1:${(edge.origin.address() as { port: number }).port}/v1/assets/index.ultra.json`;
    expect((await fetch(base)).status).toBe(401);
    expect((await fetch(base, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    expect((await call('/v1/assets', { 'X-API-Key': KEY.ultra })).status).toBe(200);
  });

  it('counts quotas in a Durable Object per credential: the basic key meets its per-minute limit, another key does not', async () => {
    const statuses: number[] = [];
    let code = '';
    for (let i = 0; i < 8 && !statuses.includes(429); i++) {
      const res = await call('/v1/assets/BTC/risk', { 'X-API-Key': QUOTA_KEY });
      statuses.push(res.status);
      if (res.status === 429) code = ((await res.json()) as { error: { code: string } }).error.code;
      else await res.arrayBuffer();
    }
    expect(statuses.at(-1)).toBe(429);
    expect(code).toBe('rate_limited');
    expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(5);
    expect((await call('/v1/assets/BTC/risk', { 'X-API-Key': KEY.pro })).status).toBe(200);
    // The count lives in the credential's Durable Object, not in the isolate: ask the object itself.
    const ns = edge.objects('QUOTAS');
    const now = Date.now();
    const month = {
      start: Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), 1),
      end: Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth() + 1, 1),
    };
    const basicId = `key:${sha256Hex(QUOTA_KEY)}`;
    const verdict = await (
      await ns.get(ns.idFromName(basicId)).fetch('https://quota.internal/take', {
        method: 'POST',
        body: JSON.stringify({ limits: { perMinute: 5, perMonth: 1000 }, now, month }),
      })
    ).json();
    expect(verdict).toMatchObject({ ok: false, code: 'rate_limited' });
  });

  it('reads keys from KV at run time: a key pushed is in force, a revoked one refused, with no redeploy', async () => {
    const NEW_KEY = 'rr_edge_key_pushed_at_run_time';
    const store = JSON.parse(keysJson());
    const statusOf = async (key: string) => {
      const res = await call('/v1/assets/BTC/risk', { 'X-API-Key': key });
      await res.arrayBuffer();
      return res.status;
    };
    expect(await statusOf(NEW_KEY)).toBe(401);
    // Ultra, and asked once a second: the polls below stay inside its minute (60) however late the refresh is.
    store.keys.push({ sha256: sha256Hex(NEW_KEY), plan: 'ultra', label: 'pushed' });
    await edge.putKeys(JSON.stringify(store));
    // Each isolate reads the value again once its copy is older than KEYS_REFRESH_MS, answering meanwhile: a request
    // sets the read off, so these ask until it is done (no later than a busy machine can be).
    expect(await until(async () => (await statusOf(NEW_KEY)) === 200, KEYS_REFRESH_MS + LATE_MS, 1_000)).toBe(true);
    // A value that no longer parses leaves the keys in force; the log says why.
    const logged = workerLog.length;
    await edge.putKeys('{"keys": [{"sha256": "not hex", "plan": "pro"}]}');
    const kept = () => /keys: KV keys\.json: .*; keeping the previous \d+ keys/.test(workerLog.slice(logged));
    expect(await until(async () => (await statusOf(NEW_KEY), kept()), KEYS_REFRESH_MS + LATE_MS, 1_000)).toBe(true);
    expect(await statusOf(NEW_KEY)).toBe(200);
    // Revoked as `keys revoke` writes it: the record kept in `revoked` for billing (decision 87), which the edge never
    // reads as a credential.
    const file = join(tempDir('rr-edge-keys-'), 'keys.json');
    writeFileSync(file, JSON.stringify(store));
    await revokeKeys(file, { label: 'pushed' });
    const revoked = readFileSync(file, 'utf8');
    expect(JSON.parse(revoked).revoked).toEqual([expect.objectContaining({ sha256: sha256Hex(NEW_KEY), plan: 'ultra' })]);
    await edge.putKeys(revoked);
    expect(await until(async () => (await statusOf(NEW_KEY)) === 401, KEYS_REFRESH_MS + LATE_MS, 200)).toBe(true);
    expect(await statusOf(KEY.pro)).toBe(200);
  });

  it('sends its origin token to that origin only: a redirect elsewhere is a 502 and the other host hears nothing', async () => {
    // A file no other test reads, so no isolate holds it yet; the file and its variants are read together.
    const risk = '/v1/assets/COIN/risk.json';
    const paths = [risk, `${risk}.br`, `${risk}.gz`];
    const get = () => call('/v1/assets/COIN/risk', { 'X-API-Key': KEY.ultra, 'Accept-Encoding': 'identity' });
    for (const path of paths) redirects.set(path, () => `${elsewhereUrl}${path}`);
    for (let i = 0; i < 3; i++) {
      const res = await get();
      expect(res.status).toBe(502);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('upstream_error');
    }
    expect(reachedElsewhere).toEqual([]);
    // A redirect within the origin (a relative Location) is followed, the token going with it (the origin
    // answers nothing without it).
    for (const path of paths) redirects.set(path, () => `${path}?moved`);
    const moved = await get();
    expect(moved.status).toBe(200);
    expect(Buffer.from(await moved.arrayBuffer()).equals(readFileSync(join(out, risk)))).toBe(true);
    redirects.clear();
    expect(reachedElsewhere).toEqual([]);
  });
});
