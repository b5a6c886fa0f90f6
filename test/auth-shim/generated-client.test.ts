/**
 * A client nobody here wrote: openapi-typescript generates types from the document the gateway serves, a script
 * calls all ten endpoints through openapi-fetch, TypeScript compiles it strictly, and it runs against a served
 * tree. A field the document types wrongly, or leaves out, breaks the compile or the run. The script uses the
 * document as a customer would, without a cast: it revalidates with If-None-Match (a declared header parameter),
 * narrows each change event by its `field` to the type of its from/to, and reads a reading's as_of and the DCA
 * multiplier as the spec types them (string or null; always null). The client behaves (polite-client.ts, compiled
 * beside it): it waits out a 429's Retry-After and reads the IETF rate-limit fields, shown here on a clock the test
 * moves. A second script manages a webhook endpoint through the same client (create, list, read, change, test, rotate
 * its secret, read its deliveries, delete), and the test message the endpoint is sent verifies with the secret the
 * client was answered.
 */
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { join } from 'node:path';
import createClient from 'openapi-fetch';
import { Webhook } from 'standardwebhooks';
import openapiTS, { astToString } from 'openapi-typescript';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createHandler } from '../../auth-shim/handler.js';
import { FileOrigin } from '../../auth-shim/node/file-origin.js';
import { loadKeys, startServer } from '../../auth-shim/node/server.js';
import { MemoryQuotaStore } from '../../auth-shim/quota.js';
import { ROOT, tempDir } from '../helpers.js';
import { rateLimits, retryAfter } from './polite-client.js';
import { KEY, KEYS_FILE, builtTree } from './tree.js';

const root = tempDir('rr-client-');
let server: Server;
let base = '';
/** What the webhook receiver was sent; it answers every message 200. */
const received: { headers: Record<string, string>; body: string }[] = [];

beforeAll(async () => {
  const s = await startServer({
    publicDir: builtTree(),
    keysFile: KEYS_FILE,
    port: 0,
    watchMs: 0,
    webhookPolicy: { allowLoopback: true },
    webhookSend: (_url, headers, body) => (
      received.push({ headers, body }),
      Promise.resolve({ status: 200, error: null, ms: 1, retryAfterMs: null })
    ),
  });
  [server, base] = [s.server, s.url];
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

/** The script a customer would write, against the generated `paths`; it prints each operation's status. */
const CLIENT = `import createClient from 'openapi-fetch';
import { rateLimits, retryAfter } from './polite-client.js';
import type { paths } from './schema.js';

const [baseUrl, key] = process.argv.slice(2) as [string, string];
const client = createClient<paths>({ baseUrl, headers: { 'X-API-Key': key } });
client.use(retryAfter());
const status: Record<string, number> = {};

const assets = await client.GET('/v1/assets');
status.listAssets = assets.response.status;
const minute = rateLimits(assets.response.headers).get('minute');
const symbol: string = assets.data!.data.assets[0]!.symbol;

const risk = await client.GET('/v1/assets/{symbol}/risk', { params: { path: { symbol } } });
status.getAssetRisk = risk.response.status;
const score: number | undefined = risk.data?.data.gravity?.score;
const stale: string[] | undefined = risk.data?.data.stale_models;
const gravityAsOf: string | null | undefined = risk.data?.data.gravity?.as_of;

// Revalidation: the ETag sent back as the declared If-None-Match header.
const etag = risk.response.headers.get('etag') ?? '';
const again = await client.GET('/v1/assets/{symbol}/risk', { params: { path: { symbol }, header: { 'If-None-Match': etag } } });
const revalidated = [again.response.status, again.data === undefined];

const history = await client.GET('/v1/assets/{symbol}/history', { params: { path: { symbol }, query: { limit: 3 } } });
status.getAssetHistory = history.response.status;
const cursor: string | null | undefined = history.data?.data.next_cursor;
const firstDate: string | undefined = history.data?.data.rows[0]?.date;

const bulk = await client.GET('/v1/bulk/risk', { params: { query: { symbols: 'BTC, ETH' } } });
status.getBulkRisk = bulk.response.status;
const missing: string[] | undefined = bulk.data?.data.missing;

const changes = await client.GET('/v1/changes', { params: { query: { limit: 1000 } } });
status.getChanges = changes.response.status;
const moved: string | undefined = changes.data?.data.events[0]?.field;
const feedCursor: string | null | undefined = changes.data?.data.next_cursor;
// Each event narrowed by its field; each value's type as the narrowed type says, checked as it runs.
const kinds: Record<string, number> = {};
const wrong: unknown[] = [];
const count = (kind: string, ok: boolean, e: unknown) => ((kinds[kind] = (kinds[kind] ?? 0) + 1), ok || wrong.push(e));
for (const e of changes.data?.data.events ?? []) {
  // What every event carries reads the same whatever its field.
  const who: string | null = e.symbol ?? e.universe;
  if (e.field === 'gravity.risk_level' || e.field === 'twap.risk_level') {
    const to: number | null = e.to;
    count('level', (to === null || Number.isInteger(to)) && typeof who === 'string', e);
  } else if (e.field === 'sma_composite.band' || e.field === 'dca.band') {
    const to: string | null = e.to;
    count('band', to === null || /^\\d\\.\\d-\\d\\.\\d$/.test(to), e);
  } else if (e.field === 'phase.label') {
    const to: string | null = e.to;
    count('phase', to === null || typeof to === 'string', e);
  } else if (e.field === 'fear_greed.label' || e.field === 'peak_valley.zone' || e.field === 'macro_risk.status') {
    const to: string | null = e.to;
    count('universe', (to === null || typeof to === 'string') && e.symbol === null, e);
  } else if (e.field === 'free_tier' || e.field === 'catalogue') {
    const to: boolean = e.to;
    count('membership', typeof to === 'boolean' && e.model === null, e);
  } else if (e.field.startsWith('stale_models.')) {
    count('stale', typeof e.to === 'boolean', e);
  } else {
    wrong.push(e);
  }
}

const summary = await client.GET('/v1/market/{universe}/summary', { params: { path: { universe: 'crypto' } } });
status.getUniverseSummary = summary.response.status;

const dca = await client.GET('/v1/signals/dca/{symbol}', { params: { path: { symbol: 'BTC' } } });
status.getDcaSignal = dca.response.status;
// Described as a number that is null (decision 107), so that openapi-fetch 0.17's response type keeps it.
const multiplier: number | null | undefined = dca.data?.data.multiplier;

const health = await client.GET('/v1/health');
status.getHealth = health.response.status;
const openapi = await client.GET('/v1/openapi.json');
status.getOpenApi = openapi.response.status;

const usage = await client.GET('/v1/usage');
status.getUsage = usage.response.status;
const plan: 'basic' | 'pro' | 'ultra' | undefined = usage.data?.data.plan;
const monthLeft: number | undefined = usage.data?.data.month?.remaining;
const perMinute: number | undefined = usage.data?.data.limits.per_minute;

const refused = await createClient<paths>({ baseUrl }).GET('/v1/assets');
const code: string | undefined = refused.error?.error.code;

console.log(
  JSON.stringify({
    status,
    seen: { minute, symbol, score, stale, gravityAsOf, revalidated, cursor, firstDate, missing, multiplier, code, moved, feedCursor, kinds, wrong, plan, monthLeft, perMinute },
  }),
);
`;

/** A customer's webhook endpoint managed through the generated client: every call typed by the document. */
const WEBHOOKS = `import createClient from 'openapi-fetch';
import type { components, paths } from './schema.js';

type Schemas = components['schemas'];
const [baseUrl, key] = process.argv.slice(2) as [string, string];
const client = createClient<paths>({ baseUrl, headers: { 'X-API-Key': key } });
const status: Record<string, number> = {};

const body: Schemas['WebhookEndpointCreate'] = {
  url: 'https://hooks.example.com/risk',
  fields: ['gravity.risk_level', 'stale_models'],
  symbols: ['BTC'],
  description: 'trading desk',
};
const created = await client.POST('/v1/webhooks', { body });
status.createWebhookEndpoint = created.response.status;
const id: string = created.data!.data.id;
const secret: string = created.data!.data.secret;
const location = created.response.headers.get('location');

const list = await client.GET('/v1/webhooks');
status.listWebhookEndpoints = list.response.status;
const maxEndpoints: number | undefined = list.data?.data.max_endpoints;
const listed: string[] | undefined = list.data?.data.endpoints.map((e) => e.id);

const one = await client.GET('/v1/webhooks/{id}', { params: { path: { id } } });
status.getWebhookEndpoint = one.response.status;
const fields: Schemas['WebhookField'][] | undefined = one.data?.data.fields;
const through: number | undefined = one.data?.data.delivered_through;

const paused = await client.PATCH('/v1/webhooks/{id}', { params: { path: { id } }, body: { enabled: false, universes: ['crypto'] } });
status.updateWebhookEndpoint = paused.response.status;
const enabled: boolean | undefined = paused.data?.data.enabled;
const reason: string | null | undefined = paused.data?.data.disabled_reason;
const universes: Schemas['Universe'][] | undefined = paused.data?.data.universes;

const tested = await client.POST('/v1/webhooks/{id}/test', { params: { path: { id } } });
status.testWebhookEndpoint = tested.response.status;
const attempt: number | undefined = tested.data?.data.attempt;
const answered: number | null | undefined = tested.data?.data.status;

const rotated = await client.POST('/v1/webhooks/{id}/rotate-secret', { params: { path: { id } } });
status.rotateWebhookSecret = rotated.response.status;
const rotatedSecret: string | undefined = rotated.data?.data.secret;
const previousUntil: string | undefined = rotated.data?.data.previous_secret_expires_at;

const deliveries = await client.GET('/v1/webhooks/{id}/deliveries', { params: { path: { id } } });
status.listWebhookDeliveries = deliveries.response.status;
const attempts = deliveries.data?.data.deliveries.map((d) => ({ attempt: d.attempt, status: d.status, error: d.error }));

// Refused by the gateway, read as the document types an error.
const refused = await client.POST('/v1/webhooks', { body: { url: 'ftp://hooks.example.com/risk' } });
const refusedCode: string | undefined = refused.error?.error.code;

const deleted = await client.DELETE('/v1/webhooks/{id}', { params: { path: { id } } });
status.deleteWebhookEndpoint = deleted.response.status;
const gone = await client.GET('/v1/webhooks/{id}', { params: { path: { id } } });
const goneCode: string | undefined = gone.error?.error.code;

console.log(
  JSON.stringify({
    status,
    seen: { id, secret, location, maxEndpoints, listed, fields, through, enabled, reason, universes, attempt, answered, rotatedSecret, previousUntil, attempts, refusedCode, goneCode },
  }),
);
`;

/** The generated types themselves, as a client of another library reads them: each line fails to compile if they are wrong. */
const TYPES = `import type { components } from './schema.js';

type Schemas = components['schemas'];
// Typed number or null, so that openapi-fetch keeps it; the document's const says always null (decision 107).
export const multiplier: Schemas['DcaSignal']['multiplier'] = null;
export const asOf: Schemas['Gravity']['as_of'][] = ['2026-10-14T00:30:00Z', null];
type Event = Schemas['ChangeEvent'];
/** The event shape a field selects (a shape may hold several fields). */
type Shape<E, F> = E extends { field: infer G } ? (F extends G ? E : never) : never;
type Of<F extends Event['field']> = Shape<Event, F>;
export const level: Of<'gravity.risk_level'>['to'][] = [1, 10, null];
// @ts-expect-error a level moves between integers, never a label
export const notALabel: Of<'twap.risk_level'>['to'] = 'High';
export const membership: Of<'free_tier'>['to'] = true;
// @ts-expect-error membership is true or false, never null
export const notNull: Of<'catalogue'>['to'] = null;
export const band: Of<'dca.band'>['from'] = '0.4-0.5';
export const stale: Of<'stale_models.twap'>['from'] = false;
// A webhook request's body is checked as it is written: a field the feed has, a universe by name, the URL required.
export const create: Schemas['WebhookEndpointCreate'] = { url: 'https://hooks.example.com/risk', fields: ['dca.band'], universes: ['quantum'] };
// @ts-expect-error a filter names a field of the feed
export const badField: Schemas['WebhookEndpointCreate'] = { url: 'https://hooks.example.com/risk', fields: ['gravity.score'] };
// @ts-expect-error the URL is required
export const noUrl: Schemas['WebhookEndpointCreate'] = { fields: [] };
export const pause: Schemas['WebhookEndpointUpdate'] = { enabled: false };
// A receiver narrows what it is sent by type, and a changes.published message carries the feed's events.
type Message = Schemas['WebhookChangesMessage'] | Schemas['WebhookTestMessage'];
export const kind = (m: Message): string => (m.type === 'changes.published' ? m.events[0]?.field ?? 'none' : m.endpoint_id);
`;

describe('a client generated from the served document', () => {
  it('compiles strictly, calls all ten endpoints against the gateway, and manages a webhook endpoint', async () => {
    const doc = await (await fetch(`${base}/v1/openapi.json`)).json();
    const dir = join(root, 'client');
    mkdirSync(dir, { recursive: true });
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
    writeFileSync(join(dir, 'schema.ts'), astToString(await openapiTS(doc)));
    writeFileSync(join(dir, 'client.ts'), CLIENT);
    writeFileSync(join(dir, 'types.ts'), TYPES);
    writeFileSync(join(dir, 'webhooks.ts'), WEBHOOKS);
    copyFileSync(join(ROOT, 'test', 'auth-shim', 'polite-client.ts'), join(dir, 'polite-client.ts'));
    writeFileSync(join(dir, 'package.json'), '{"type": "module"}');
    const options = {
      strict: true,
      noUncheckedIndexedAccess: true,
      target: 'es2022',
      module: 'nodenext',
      moduleResolution: 'nodenext',
      skipLibCheck: true,
    };
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { ...options, outDir: 'out' },
        files: ['client.ts', 'types.ts', 'webhooks.ts', 'schema.ts', 'polite-client.ts'],
      }),
    );
    const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir], { encoding: 'utf8' });
    expect(tsc.stdout + tsc.stderr, 'tsc').toBe('');
    // Not spawnSync: the gateway answering the client runs in this process, which must stay free to answer.
    const run = await new Promise<{ stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [join(dir, 'out', 'client.js'), base, KEY.ultra]);
      let [stdout, stderr] = ['', ''];
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.on('close', () => resolve({ stdout, stderr }));
    });
    expect(run.stderr).toBe('');
    const { status, seen } = JSON.parse(run.stdout) as { status: Record<string, number>; seen: Record<string, unknown> };
    expect(Object.keys(status)).toHaveLength(10);
    for (const [op, s] of Object.entries(status)) expect(s, op).toBe(200);
    expect(seen).toMatchObject({
      minute: { quota: 60, windowSeconds: 60, remaining: 59, resetSeconds: expect.any(Number) },
      symbol: expect.any(String),
      score: expect.any(Number),
      gravityAsOf: expect.any(String),
      revalidated: [304, true],
      missing: [],
      multiplier: null,
      code: 'unauthorized',
      moved: expect.any(String),
      feedCursor: null,
      wrong: [],
      plan: 'ultra',
      monthLeft: expect.any(Number),
      perMinute: 60,
    });
    // The served tree's refreshes moved levels, bands and phases at least: each narrowed branch ran.
    const kinds = seen.kinds as Record<string, number>;
    for (const kind of ['level', 'band', 'phase']) expect(kinds[kind], kind).toBeGreaterThan(0);

    // The webhook script, against the shim with a webhook store: every call answered as the document says.
    const hooked = await new Promise<{ stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [join(dir, 'out', 'webhooks.js'), base, KEY.pro]);
      let [stdout, stderr] = ['', ''];
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.on('close', () => resolve({ stdout, stderr }));
    });
    expect(hooked.stderr).toBe('');
    const webhooks = JSON.parse(hooked.stdout) as { status: Record<string, number>; seen: Record<string, unknown> };
    expect(webhooks.status).toEqual({
      createWebhookEndpoint: 201,
      listWebhookEndpoints: 200,
      getWebhookEndpoint: 200,
      updateWebhookEndpoint: 200,
      testWebhookEndpoint: 200,
      rotateWebhookSecret: 200,
      listWebhookDeliveries: 200,
      deleteWebhookEndpoint: 204,
    });
    const id = webhooks.seen.id as string;
    expect(webhooks.seen).toMatchObject({
      id: expect.stringMatching(/^ep_[0-9a-f]{24}$/),
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
      location: `/v1/webhooks/${id}`,
      maxEndpoints: 5,
      listed: [id],
      fields: ['gravity.risk_level', 'stale_models'],
      through: expect.any(Number),
      enabled: false,
      reason: expect.stringMatching(/^disabled by its owner/),
      universes: ['crypto'],
      attempt: 1,
      answered: 200,
      rotatedSecret: expect.stringMatching(/^whsec_/),
      previousUntil: expect.any(String),
      attempts: [{ attempt: 1, status: 200, error: null }],
      refusedCode: 'bad_parameter',
      goneCode: 'not_found',
    });
    expect(webhooks.seen.rotatedSecret).not.toBe(webhooks.seen.secret);
    // The test message, signed with the secret the client was answered, verifies as Standard Webhooks verifies it.
    const test = received.find((r) => r.body.includes(id))!;
    expect(new Webhook(webhooks.seen.secret as string).verify(test.body, test.headers)).toEqual({
      type: 'webhook.test',
      endpoint_id: id,
      sent_at: expect.any(String),
    });
  });
});

describe('a client that behaves (issue 55): it waits out Retry-After and reads the rate-limit fields', () => {
  /** Just the operation called, as the generated `paths` type it: the example's types are checked with those above. */
  type Paths = {
    '/v1/assets/{symbol}/risk': {
      get: {
        parameters: { path: { symbol: string } };
        responses: { 200: { content: { 'application/json': { data: { symbol: string } } } } };
      };
    };
  };

  it("drives a basic key (5 a minute) to a 429, waits its Retry-After on the test's clock, and retries once", async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    try {
      vi.setSystemTime(Date.UTC(2026, 9, 14, 12, 0, 10));
      const handle = createHandler({
        origin: FileOrigin.open(builtTree(), 0),
        keys: loadKeys(KEYS_FILE),
        quotas: new MemoryQuotaStore(),
        now: () => Date.now(),
      });
      const sent: number[] = [];
      const fetch = (request: Request) => (sent.push(Date.now()), handle(request));
      const make = () => {
        const c = createClient<Paths>({ baseUrl: 'http://shim.test', headers: { 'X-API-Key': KEY.basic }, fetch });
        c.use(retryAfter());
        return c;
      };
      const [first, second] = [make(), make()];
      const risk = (c: typeof first) => c.GET('/v1/assets/{symbol}/risk', { params: { path: { symbol: 'BTC' } } });
      for (let i = 0; i < 5; i++) {
        const ok = await risk(first);
        expect(ok.response.status).toBe(200);
        // The IETF fields, read per policy: the minute's quota and what it still admits, the month beside it.
        expect(rateLimits(ok.response.headers).get('minute')).toEqual({
          quota: 5,
          windowSeconds: 60,
          remaining: 4 - i,
          resetSeconds: 60 - 2 * i,
        });
        expect(rateLimits(ok.response.headers).get('month')).toMatchObject({ quota: 1000, remaining: 999 - i });
        vi.advanceTimersByTime(2_000);
      }
      // Two callers on the key meet the spent minute at 12:00:20; the oldest request leaves it at 12:01:10, in 50 s.
      sent.length = 0;
      let [a, b]: [Awaited<ReturnType<typeof risk>> | undefined, Awaited<ReturnType<typeof risk>> | undefined] = [undefined, undefined];
      const pending = [risk(first).then((r) => (a = r)), risk(second).then((r) => (b = r))];
      await vi.advanceTimersByTimeAsync(49_999);
      expect([a, b, sent.length]).toEqual([undefined, undefined, 2]);
      await vi.advanceTimersByTimeAsync(1);
      await Promise.all(pending);
      const at = Date.UTC(2026, 9, 14, 12, 1, 10);
      expect(sent).toEqual([Date.UTC(2026, 9, 14, 12, 0, 20), Date.UTC(2026, 9, 14, 12, 0, 20), at, at]);
      // The first retry takes the place the oldest request left; the second finds the minute spent again and, its
      // one retry used, goes back to its caller with the 429 and when to come back.
      expect(a!.response.status).toBe(200);
      expect(a!.data?.data.symbol).toBe('BTC');
      expect(rateLimits(a!.response.headers).get('minute')).toMatchObject({ remaining: 0, resetSeconds: 2 });
      expect(b!.response.status).toBe(429);
      expect(b!.response.headers.get('retry-after')).toBe('2');
      expect(rateLimits(b!.response.headers).get('minute')).toEqual({ quota: 5, windowSeconds: 60, remaining: 0, resetSeconds: 2 });
      // A Retry-After past what the caller will wait is not waited out.
      sent.length = 0;
      const bounded = createClient<Paths>({ baseUrl: 'http://shim.test', headers: { 'X-API-Key': KEY.basic }, fetch });
      bounded.use(retryAfter({ maxWaitSeconds: 1 }));
      expect((await risk(bounded)).response.status).toBe(429);
      expect(sent).toHaveLength(1);
    } finally {
      vi.useRealTimers();
    }
  });
});
