/**
 * Webhooks end to end on the Node server (decision 108), as an operator runs it and a customer uses it: endpoints
 * made with `POST /v1/webhooks` and a demo key, the next day's tree built into the served folder (the server notices
 * the swap by polling), and real receivers on loopback. What a customer is promised is checked from the outside: the
 * refresh's events, signed so the standardwebhooks library verifies them, within 60 s of the build; the position
 * kept across a restart; retries with the same id; 410 disables; a redirect is not followed; a fleet on one Redis
 * sends each message once and a survivor takes over; the operator's CLI switches an endpoint off and on; the metrics
 * count; the logs never hold a secret or a signature. Seconds from each swap to arrival are printed (`webhook e2e:`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pino, { type Logger } from 'pino';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { SqliteQuotaStore } from '../../../auth-shim/node/quota-sqlite.js';
import { webhookStoreBeside } from '../../../auth-shim/node/quota-stores.js';
import { startServer, type ServeOptions, type Started } from '../../../auth-shim/node/server.js';
import { sendWebhook } from '../../../auth-shim/node/webhook-send.js';
import { RedisWebhookStore } from '../../../auth-shim/node/webhooks-redis.js';
import { MemoryWebhookStore, type WebhookStore } from '../../../auth-shim/webhooks/store.js';
import { BIN, buildSmall, cliAsync, readJson, smallSite, tempDir, until } from '../../helpers.js';
import { freePort, redisAway, redisPrefixes, REDIS_URL, removesAddedKeys } from '../../services.js';
import { KEY, KEYS_FILE } from '../tree.js';

const root = tempDir('rr-webhooks-e2e-');
/** The days of the small site this file publishes: day d is built as published on 2026-10-(13+d). */
const DAYS = [1, 2, 3, 4];
const dayIso = (d: number) => `2026-10-${13 + d}`;
const pagesOf = (d: number) => join(root, `pages-day${d}`);

beforeAll(async () => {
  for (const d of DAYS) await smallSite(pagesOf(d), d);
});

/** Every measured figure, printed at the end: seconds from a build's swap to a receiver's arrival. */
const figures: string[] = [];
afterAll(() => {
  if (figures.length) process.stdout.write(`webhook e2e:\n  ${figures.join('\n  ')}\n`);
});
const seconds = (ms: number) => Math.round(ms / 100) / 10;

/** Builds day `d` into `out` (the swap of `v1`), and answers when the build resolved: the swap's moment. */
async function publish(out: string, d: number): Promise<number> {
  await buildSmall(pagesOf(d), out, { now: `${dayIso(d)}T00:30:00Z` });
  return Date.now();
}

/** A served folder with day 1 published (an empty feed: day 1 starts the ledger). */
async function treeAt(name: string): Promise<string> {
  const out = join(root, name);
  await publish(out, 1);
  return out;
}

const ledger = (out: string) => readJson<{ events: { published_at: string }[] }>(join(out, 'v1', 'changes', 'ledger.json'));

interface Arrival {
  id: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** When the request's headers arrived. */
  at: number;
}
type Answer = { status: number; headers?: Record<string, string>; delayMs?: number } | 'hang';

/** A receiver on loopback: every request recorded, answered as `answer` says (`hang`: never, until the sender goes). */
async function receiver(answer: (n: number) => Answer = () => ({ status: 200 })) {
  const got: Arrival[] = [];
  const held: ServerResponse[] = [];
  const server = createServer((req, res) => {
    const at = Date.now();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      got.push({ id: String(req.headers['webhook-id']), headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at });
      const a = answer(got.length);
      if (a === 'hang') return void held.push(res);
      setTimeout(() => {
        res.writeHead(a.status, a.headers);
        res.end('{}');
      }, a.delayMs ?? 0);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`;
  const close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  onTestFinished(close);
  return { url, got, held, close };
}

/** The server's log, kept in memory at every level: what a log shipper would be handed. */
function memoryLogger(): { logger: Logger; text: () => string } {
  let text = '';
  const logger = pino({ level: 'trace', base: undefined }, { write: (s: string) => void (text += s) });
  return { logger, text: () => text };
}

/** The Node server as `serve` starts it, on a free port, loopback receivers allowed; drained when the test ends. */
async function serve(o: Partial<ServeOptions> & { publicDir: string }): Promise<Started> {
  const s = await startServer({ keysFile: KEYS_FILE, port: 0, webhookPolicy: { allowLoopback: true }, ...o });
  await s.ready;
  onTestFinished(() => s.drain());
  return s;
}

/**
 * The Node server over a SQLite quota database with its webhook store beside, as `serve` opens them; `stop` drains it
 * and closes the database (once, also when the test ends).
 */
async function sqliteServer(publicDir: string, file: string, o: Partial<ServeOptions> = {}) {
  const quotas = await SqliteQuotaStore.open(file);
  const webhooks = webhookStoreBeside(quotas, file);
  const s = await startServer({ publicDir, keysFile: KEYS_FILE, port: 0, quotas, webhooks, webhookPolicy: { allowLoopback: true }, ...o });
  let stopped: Promise<void> | undefined;
  const stop = () => (stopped ??= s.drain().then(() => quotas.close()));
  onTestFinished(stop);
  return { s, stop, webhooks };
}

/** A call to the API with a key; the body as JSON. */
async function api(base: string, key: string, method: string, path: string, body?: unknown) {
  const res = await fetch(base + path, {
    method,
    headers: { 'X-API-Key': key, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return { status: res.status, json: (text ? JSON.parse(text) : null) as any };
}

/** `POST /v1/webhooks`: the endpoint's id and its secret (shown this once). */
async function createEndpoint(base: string, key: string, url: string, description = 'webhooks e2e') {
  const r = await api(base, key, 'POST', '/v1/webhooks', { url, description });
  expect(r.status, JSON.stringify(r.json)).toBe(201);
  return { id: r.json.data.id as string, secret: r.json.data.secret as string };
}

/** The events `GET /v1/changes` holds for one publication day, all on one page. */
async function changesOf(base: string, key: string, d: number) {
  const r = await api(base, key, 'GET', `/v1/changes?from=${dayIso(d)}&to=${dayIso(d)}&limit=1000`);
  expect(r.status).toBe(200);
  expect(r.json.data.next_cursor).toBeNull();
  return r.json.data.events as unknown[];
}

/** A message as a customer's code reads it: verified with the endpoint's secret, then parsed. */
function verified(a: Arrival, secret: string) {
  const headers = Object.fromEntries(Object.entries(a.headers).map(([k, v]) => [k, String(v)]));
  expect(() => new Webhook(secret).verify(a.body, headers)).not.toThrow();
  return JSON.parse(a.body) as { type: string; published_at: string; from_position: number; to_position: number; events: unknown[] };
}

/** Waits for `n` arrivals (generously: the machine may be loaded), failing with what did arrive. */
async function arrivals(r: { got: Arrival[] }, n: number, ms = 90_000): Promise<Arrival[]> {
  await until(() => r.got.length >= n, ms, 50);
  expect(r.got.length, `arrivals: ${r.got.map((a) => a.id).join(', ')}`).toBeGreaterThanOrEqual(n);
  return r.got;
}

/** Waits until the store shows the endpoint with `check` true (read from the store: the API's minute is kept for assertions). */
const storeShows = (store: WebhookStore, id: string, check: (e: NonNullable<Awaited<ReturnType<WebhookStore['get']>>>) => boolean) =>
  until(async () => {
    const e = await store.get(id);
    return e !== null && check(e);
  }, 60_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What must never reach a log: any signing secret, and the signatures the receivers were sent (with or without `v1,`). */
function expectNoSecrets(text: string, received: Arrival[], what: string) {
  expect(text, what).not.toContain('whsec_');
  for (const a of received)
    for (const signature of String(a.headers['webhook-signature']).split(' '))
      expect(text, what).not.toContain(signature.replace(/^v1,/, ''));
}

describe('webhooks end to end on the Node server (SQLite store)', () => {
  it('delivers the next refresh signed, equal to /v1/changes, within 60 s of the swap, and keeps its position across a restart', async () => {
    const out = await treeAt('sqlite');
    const file = join(root, 'sqlite-quotas.sqlite');
    const log = memoryLogger();
    // Default tree polling (5 s) and delivery tick (1 s): the latency measured is the one an operator gets.
    const start = () => sqliteServer(out, file, { logger: log.logger });
    const r = await receiver();
    let { s, stop, webhooks } = await start();
    const { id, secret } = await createEndpoint(s.url, KEY.pro, r.url);
    expect(secret).toMatch(/^whsec_/);

    const swapped = await publish(out, 2);
    const [first] = await arrivals(r, 1);
    const lag = first!.at - swapped;
    figures.push(`SQLite, refresh of day 2: ${seconds(lag)} s from swap to arrival (tree polled every 5 s)`);
    expect(lag).toBeLessThanOrEqual(60_000);
    const m = verified(first!, secret);
    const length2 = ledger(out).events.length;
    expect(m).toMatchObject({ type: 'changes.published', published_at: `${dayIso(2)}T00:30:00Z`, from_position: 1, to_position: length2 });
    expect(first!.id).toBe(`msg_${id}_${length2}`);
    expect(m.events).toEqual(await changesOf(s.url, KEY.pro, 2));
    expect(m.events.length).toBeGreaterThan(0);

    // The arrival comes before the store records it delivered: wait for the record (at most a few calls).
    await storeShows(webhooks, id, (e) => e.delivered_through === length2);
    const shown = await api(s.url, KEY.pro, 'GET', `/v1/webhooks/${id}`);
    expect(shown.json.data).toMatchObject({ enabled: true, delivered_through: length2, pending: 0 });
    const deliveries = await api(s.url, KEY.pro, 'GET', `/v1/webhooks/${id}/deliveries`);
    expect(deliveries.json.data.deliveries).toEqual([
      expect.objectContaining({ message_id: first!.id, attempt: 1, status: 200, error: null }),
    ]);

    // A restart on the same database: the endpoint is there, and the next refresh is delivered from where it was.
    await stop();
    ({ s, stop, webhooks } = await start());
    const listed = await api(s.url, KEY.pro, 'GET', '/v1/webhooks');
    expect(listed.json.data.endpoints).toEqual([expect.objectContaining({ id, delivered_through: length2, pending: 0 })]);
    const swapped3 = await publish(out, 3);
    const [, second] = await arrivals(r, 2);
    figures.push(`SQLite after a restart, refresh of day 3: ${seconds(second!.at - swapped3)} s from swap to arrival`);
    expect(second!.at - swapped3).toBeLessThanOrEqual(60_000);
    const m3 = verified(second!, secret);
    const length3 = ledger(out).events.length;
    expect(m3).toMatchObject({ published_at: `${dayIso(3)}T00:30:00Z`, from_position: length2 + 1, to_position: length3 });
    expect(m3.events).toEqual(await changesOf(s.url, KEY.pro, 3));
    await storeShows(webhooks, id, (e) => e.delivered_through === length3 && e.pending === null);
    await sleep(2_000); // a few delivery ticks: nothing is sent twice
    expect(r.got.map((a) => a.id)).toEqual([`msg_${id}_${length2}`, `msg_${id}_${length3}`]);
    await stop();
    expectNoSecrets(log.text(), r.got, 'the server log');
  }, 240_000);
});

describe('webhooks end to end: receivers that fail, disable, redirect or answer slowly', () => {
  it('retries a 500 with the same id, disables on 410, never follows a redirect, waits for a slow answer; metrics count it all', async () => {
    const out = await treeAt('receivers');
    const log = memoryLogger();
    // A store of the test's own, so that waits read it and leave the API's minute for the assertions.
    const store = new MemoryWebhookStore();
    const s = await serve({ publicDir: out, webhooks: store, watchMs: 500, metricsPort: 0, logger: log.logger });
    const flaky = await receiver((n) => ({ status: n === 1 ? 500 : 200 }));
    const gone = await receiver(() => ({ status: 410 }));
    const target = await receiver();
    const redirecting = await receiver(() => ({ status: 302, headers: { Location: target.url } }));
    const slow = await receiver(() => ({ status: 200, delayMs: 2_000 }));
    // The ultra key: this test's calls stay well inside its minute.
    const ep = {
      flaky: await createEndpoint(s.url, KEY.ultra, flaky.url),
      gone: await createEndpoint(s.url, KEY.ultra, gone.url),
      redirecting: await createEndpoint(s.url, KEY.ultra, redirecting.url),
      slow: await createEndpoint(s.url, KEY.ultra, slow.url),
    };
    const get = async (name: keyof typeof ep) => (await api(s.url, KEY.ultra, 'GET', `/v1/webhooks/${ep[name].id}`)).json.data;
    const attempts = async (name: keyof typeof ep) =>
      (await api(s.url, KEY.ultra, 'GET', `/v1/webhooks/${ep[name].id}/deliveries`)).json.data.deliveries as {
        message_id: string;
        attempt: number;
        status: number | null;
        error: string | null;
        ms: number;
      }[];

    const swapped = await publish(out, 2);
    const length2 = ledger(out).events.length;
    // 500 once, then 200: the same message (id and bytes) about 5 s later (the first retry's 5 s, +-10%).
    const [failed, retried] = await arrivals(flaky, 2);
    figures.push(
      `receivers, refresh of day 2: first attempt ${seconds(failed!.at - swapped)} s after the swap; the retry after the 500 came ${seconds(retried!.at - failed!.at)} s later`,
    );
    expect(failed!.at - swapped).toBeLessThanOrEqual(60_000);
    expect(retried!.id).toBe(failed!.id);
    expect(retried!.body).toBe(failed!.body);
    expect(retried!.at - failed!.at).toBeGreaterThanOrEqual(4_000);
    expect(retried!.at - failed!.at).toBeLessThanOrEqual(30_000);
    verified(retried!, ep.flaky.secret);

    // A slow answer (2 s) is still a delivery.
    const [slowOne] = await arrivals(slow, 1);
    figures.push(
      `receivers, refresh of day 2: the slow receiver's arrival ${seconds(slowOne!.at - swapped)} s after the swap (answered 2 s later)`,
    );
    await storeShows(store, ep.slow.id, (e) => e.delivered_through === length2);
    expect(await get('slow')).toMatchObject({ enabled: true, delivered_through: length2, pending: 0 });
    const [slowAttempt] = await attempts('slow');
    expect(slowAttempt).toMatchObject({ message_id: slowOne!.id, status: 200, error: null });
    expect(slowAttempt!.ms).toBeGreaterThanOrEqual(1_900);

    // 410: disabled at once, saying why; the message stays undelivered.
    await arrivals(gone, 1);
    await storeShows(store, ep.gone.id, (e) => !e.enabled);
    const goneShown = await get('gone');
    expect(goneShown).toMatchObject({ enabled: false, delivered_through: 0, pending: 1 });
    expect(goneShown.disabled_reason).toMatch(/410/);

    // A redirect: not followed (its target hears nothing), a failure naming it in the deliveries.
    await arrivals(redirecting, 1);
    await until(async () => (await store.attempts(ep.redirecting.id)).length > 0, 30_000);
    const redirected = (await attempts('redirecting')).at(-1);
    expect(redirected).toMatchObject({ attempt: 1, status: 302 });
    expect(redirected!.error).toMatch(/redirect to .*\/hook not followed/);
    expect(await get('redirecting')).toMatchObject({ enabled: true, delivered_through: 0 });

    // The next refresh: the flaky and slow receivers get it; the disabled one nothing; the redirect's target nothing.
    const swapped3 = await publish(out, 3);
    const length3 = ledger(out).events.length;
    const [, , third] = await arrivals(flaky, 3);
    const [, slowThree] = await arrivals(slow, 2);
    figures.push(`receivers, refresh of day 3: ${seconds(third!.at - swapped3)} s from swap to arrival`);
    expect(verified(third!, ep.flaky.secret)).toMatchObject({ from_position: length2 + 1, to_position: length3 });
    expect(verified(slowThree!, ep.slow.secret)).toMatchObject({ from_position: length2 + 1, to_position: length3 });
    await sleep(3_000); // several delivery ticks after the refresh was seen
    expect(gone.got).toHaveLength(1);
    expect(target.got).toHaveLength(0);
    expect(await get('gone')).toMatchObject({ enabled: false, delivered_through: 0 });

    // Metrics: attempts by outcome, and the lag to the first attempt at each message.
    const metrics = await (await fetch(s.metricsUrl!)).text();
    const value = (line: RegExp) => Number(line.exec(metrics)?.[1] ?? NaN);
    expect(value(/^risk_readings_webhook_attempts_total\{outcome="delivered"\} (\d+)/m)).toBeGreaterThanOrEqual(4);
    expect(value(/^risk_readings_webhook_attempts_total\{outcome="failed"\} (\d+)/m)).toBeGreaterThanOrEqual(3);
    expect(value(/^risk_readings_webhook_lag_seconds_count (\d+)/m)).toBeGreaterThanOrEqual(1);

    await s.drain();
    expectNoSecrets(
      log.text(),
      [flaky, gone, redirecting, slow].flatMap((r) => r.got),
      'the server log',
    );
  }, 240_000);
});

describe('webhooks end to end: the operator’s CLI on a running server’s database', () => {
  it('lists the endpoint without its secret, disables it (no delivery at the next refresh) and enables it (resumes there)', async () => {
    const out = await treeAt('cli');
    const file = join(root, 'cli-quotas.sqlite');
    const log = memoryLogger();
    const { s, webhooks } = await sqliteServer(out, file, { watchMs: 500, logger: log.logger });
    const r = await receiver();
    const { id, secret } = await createEndpoint(s.url, KEY.pro, r.url);
    await publish(out, 2);
    const length2 = ledger(out).events.length;
    await arrivals(r, 1);
    await storeShows(webhooks, id, (e) => e.delivered_through === length2);

    const listed = await cliAsync(['webhooks', 'list', '--quotas', file]);
    expect(listed.status, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(
      new RegExp(`${id}\\s+label:demo pro key .*\\s+enabled\\s+${length2}\\s+-\\s+${r.url.replace(/[.]/g, '\\.')}`),
    );
    const json = await cliAsync(['webhooks', 'list', '--quotas', file, '--json']);
    expect(JSON.parse(json.stdout)).toEqual([expect.objectContaining({ id, enabled: true, delivered_through: length2, in_flight: null })]);
    for (const o of [listed, json]) expect(o.stdout + o.stderr).not.toContain('whsec_');

    const disabled = await cliAsync(['webhooks', 'disable', id, '--quotas', file, '--reason', 'e2e test']);
    expect(disabled.status, disabled.stderr).toBe(0);
    const builtBefore = s.origin.builtAt;
    await publish(out, 3);
    const length3 = ledger(out).events.length;
    // The server has the new tree, and several delivery ticks pass: nothing is sent to a disabled endpoint.
    await until(() => s.origin.builtAt !== builtBefore, 60_000, 50);
    expect(s.origin.builtAt).not.toBe(builtBefore);
    await sleep(3_000);
    expect(r.got).toHaveLength(1);
    const shown = (await api(s.url, KEY.pro, 'GET', `/v1/webhooks/${id}`)).json.data;
    expect(shown).toMatchObject({ enabled: false, delivered_through: length2, pending: 1 });
    expect(shown.disabled_reason).toMatch(/^disabled by the operator at .*: e2e test$/);

    const enabled = await cliAsync(['webhooks', 'enable', id, '--quotas', file]);
    expect(enabled.status, enabled.stderr).toBe(0);
    const enabledAt = Date.now();
    const [, resumed] = await arrivals(r, 2);
    figures.push(`CLI: the message held while disabled arrived ${seconds(resumed!.at - enabledAt)} s after webhooks enable`);
    expect(verified(resumed!, secret)).toMatchObject({
      published_at: `${dayIso(3)}T00:30:00Z`,
      from_position: length2 + 1,
      to_position: length3,
    });
    await storeShows(webhooks, id, (e) => e.delivered_through === length3);
    const after = await cliAsync(['webhooks', 'list', '--quotas', file, '--json']);
    expect(JSON.parse(after.stdout)).toEqual([
      expect.objectContaining({ id, enabled: true, disabled_reason: null, delivered_through: length3 }),
    ]);
    expectNoSecrets(log.text(), r.got, 'the server log');
  }, 240_000);
});

const noRedis = await redisAway('the webhook fleet end-to-end tests');
const prefix = redisPrefixes(noRedis);

/** `serve` as an operator runs it, a child process; killed when the file ends if still running. */
const children: ChildProcess[] = [];
afterAll(() => children.forEach((c) => c.exitCode === null && c.signalCode === null && c.kill('SIGKILL')));
/** `serve` as a child process over `out`, counting in `quotas`, loopback webhooks allowed. */
function serveChild(out: string, quotas: string, port: number) {
  const args = ['--public', out, '--keys', KEYS_FILE, '--quotas', quotas, '--port', String(port), '--webhooks-allow-loopback'];
  const child = spawn(process.execPath, [BIN, 'serve', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

/** The description of the hard-stop test's endpoint, by which a run cut short finds what it left. */
const HARD_STOP = 'webhooks e2e: hard stop';

/** The Redis store, counting the claims it was refused: evidence that two instances competed for an endpoint. */
class ClaimsCounted extends RedisWebhookStore {
  refused = 0;
  override async claim(id: string, holder: string, ms: number, now: number): Promise<boolean> {
    const ok = await super.claim(id, holder, ms, now);
    if (!ok) this.refused++;
    return ok;
  }
}

describe.skipIf(noRedis !== null)(`webhooks end to end: a fleet on one Redis (skipped: ${noRedis ?? 'Redis answers'})`, () => {
  it('sends each message once with two instances running, and the one left delivers once the other drains', async () => {
    const out = await treeAt('fleet');
    const shared = prefix();
    const log = memoryLogger();
    /** Who made each attempt: the sender is the server's own (sendWebhook under its policy), counted on the way. */
    const sentBy: string[] = [];
    const instance = async (name: string) => {
      const store = new ClaimsCounted(REDIS_URL, shared);
      onTestFinished(() => store.close());
      const policy = { allowLoopback: true };
      const s = await serve({
        publicDir: out,
        webhooks: store,
        webhookPolicy: policy,
        webhookSend: (url, headers, body) => (sentBy.push(name), sendWebhook(url, headers, body, { policy })),
        watchMs: 500,
        logger: log.logger,
      });
      return { s, store };
    };
    const a = await instance('a');
    const b = await instance('b');
    // Each answer takes 2.5 s, so the instance that did not win an endpoint's claim looks while the other sends: the
    // claim, not luck, is what keeps the message single.
    const slowly = () => receiver(() => ({ status: 200, delayMs: 2_500 }));
    const receivers = [await slowly(), await slowly(), await slowly()];
    // Made on either instance, seen by both.
    const eps = [
      await createEndpoint(a.s.url, KEY.pro, receivers[0]!.url),
      await createEndpoint(b.s.url, KEY.pro, receivers[1]!.url),
      await createEndpoint(a.s.url, KEY.pro, receivers[2]!.url),
    ];
    expect((await api(b.s.url, KEY.pro, 'GET', '/v1/webhooks')).json.data.endpoints.map((e: { id: string }) => e.id).sort()).toEqual(
      eps.map((e) => e.id).sort(),
    );
    const settled = (length: number) =>
      Promise.all(eps.map((e) => storeShows(a.store, e.id, (r) => r.delivered_through === length && r.pending === null)));

    for (const [n, d] of [
      [1, 2],
      [2, 3],
    ] as const) {
      const swapped = await publish(out, d);
      const length = ledger(out).events.length;
      for (const r of receivers) await arrivals(r, n);
      figures.push(
        `Redis fleet of two, refresh of day ${d}: ${receivers.map((r) => seconds(r.got[n - 1]!.at - swapped)).join(', ')} s from swap to arrival`,
      );
      for (const r of receivers) expect(r.got[n - 1]!.at - swapped).toBeLessThanOrEqual(60_000);
      await settled(length);
    }
    await sleep(3_000); // several ticks of both instances: any second send would be in by now
    for (const [i, r] of receivers.entries()) {
      const ids = r.got.map((x) => x.id);
      expect(ids, `receiver ${i}`).toHaveLength(2);
      expect(new Set(ids).size, `receiver ${i}`).toBe(2);
      for (const x of r.got) verified(x, eps[i]!.secret);
    }
    const refused = a.store.refused + b.store.refused;
    figures.push(
      `Redis fleet of two: attempts made by a ${sentBy.filter((x) => x === 'a').length}, by b ${sentBy.filter((x) => x === 'b').length}; claims refused to the other: ${refused}`,
    );
    expect(sentBy).toHaveLength(6);
    expect(refused, 'the instances competed for the endpoints').toBeGreaterThan(0);

    // A clean stop (drain) of one: the other delivers the next refresh, with no claim left to wait out.
    await a.s.drain();
    const swapped4 = await publish(out, 4);
    for (const r of receivers) await arrivals(r, 3);
    figures.push(
      `Redis fleet, one drained, refresh of day 4: ${receivers.map((r) => seconds(r.got[2]!.at - swapped4)).join(', ')} s from swap to arrival`,
    );
    for (const r of receivers) expect(r.got[2]!.at - swapped4).toBeLessThanOrEqual(60_000);
    expect(sentBy.slice(6)).toEqual(['b', 'b', 'b']);
    await settled(ledger(out).events.length);
    for (const [i, r] of receivers.entries()) expect(new Set(r.got.map((x) => x.id)).size, `receiver ${i}`).toBe(3);
    await b.s.drain();
    expectNoSecrets(
      log.text(),
      receivers.flatMap((r) => r.got),
      'the fleet’s log',
    );
  }, 240_000);

  it('a serve killed (SIGKILL) while it sends is taken over by another instance within 60 s, the same message resent', async () => {
    // `serve` keys its Redis under the default prefix: the fleet gets a Redis database of its own, and this test
    // removes every key it added there.
    const url = new URL(REDIS_URL);
    url.pathname = '/15';
    const fleetUrl = url.toString();
    const redis = new Redis(fleetUrl, { maxRetriesPerRequest: 1 });
    onTestFinished(() => void redis.disconnect());
    const store = new RedisWebhookStore(fleetUrl);
    onTestFinished(() => store.close());
    // An endpoint a run of this test cut short left behind goes; any other would be delivered to by this fleet.
    for (const e of await store.list()) if (e.description === HARD_STOP) await store.remove(e.id);
    expect(await store.list(), `database 15 of ${REDIS_URL} holds webhook endpoints this test did not make`).toEqual([]);
    await removesAddedKeys(fleetUrl);

    const out = await treeAt('killed');
    const port = await freePort();
    const child = serveChild(out, fleetUrl, port);
    await until(() => child.stderr().includes('serving '), 60_000, 50);
    expect(child.stderr()).toContain('serving ');
    const base = `http://127.0.0.1:${port}`;
    // The first request is held unanswered (the child is mid-send when it is killed); the rest are answered 200.
    const r = await receiver((n) => (n === 1 ? 'hang' : { status: 200 }));
    const { id, secret } = await createEndpoint(base, KEY.pro, r.url, HARD_STOP);

    // Only the child runs: it sends (the tree is polled every 5 s by serve).
    await publish(out, 2);
    const length = ledger(out).events.length;
    const [held] = await arrivals(r, 1);
    expect(await redis.get(`rr:q:wh:claim:${id}`)).not.toBeNull();
    child.child.kill('SIGKILL');
    const killed = Date.now();
    await child.exited;

    const survivor = await serve({ publicDir: out, webhooks: store, watchMs: 500 });
    const [, resent] = await arrivals(r, 2, 120_000);
    figures.push(
      `hard stop: the message in flight resent by the survivor ${seconds(resent!.at - killed)} s after the SIGKILL (claims last 30 s)`,
    );
    expect(resent!.at - killed).toBeLessThanOrEqual(60_000);
    expect(resent!.id).toBe(held!.id);
    expect(resent!.body).toBe(held!.body);
    expect(verified(resent!, secret)).toMatchObject({ from_position: 1, to_position: length });
    await storeShows(store, id, (e) => e.delivered_through === length && e.pending === null);
    expect((await api(survivor.url, KEY.pro, 'GET', `/v1/webhooks/${id}`)).json.data).toMatchObject({
      delivered_through: length,
      pending: 0,
    });
    await survivor.drain();
    await store.remove(id);
    expectNoSecrets(child.stdout() + child.stderr(), r.got, 'the killed serve’s output');
  }, 240_000);
});

describe('webhooks end to end: serve killed mid-send on its SQLite database', () => {
  it('sends the message in flight again, with the same id and bytes, once serve is started again', async () => {
    const out = await treeAt('sqlite-killed');
    const file = join(root, 'killed-quotas.sqlite');
    const start = async () => {
      const port = await freePort();
      const child = serveChild(out, file, port);
      await until(() => child.stderr().includes('serving ') || child.child.exitCode !== null, 60_000, 50);
      expect(child.stderr()).toContain('serving ');
      return { ...child, base: `http://127.0.0.1:${port}` };
    };
    const r = await receiver((n) => (n === 1 ? 'hang' : { status: 200 }));
    const first = await start();
    const { id, secret } = await createEndpoint(first.base, KEY.pro, r.url);
    await publish(out, 2);
    const length = ledger(out).events.length;
    const [held] = await arrivals(r, 1);
    first.child.kill('SIGKILL');
    await first.exited;

    const second = await start();
    const restarted = Date.now();
    const [, resent] = await arrivals(r, 2);
    figures.push(
      `SQLite, serve killed mid-send: the message resent ${seconds(resent!.at - restarted)} s after the restarted serve listened`,
    );
    expect(resent!.id).toBe(held!.id);
    expect(resent!.body).toBe(held!.body);
    expect(verified(resent!, secret)).toMatchObject({ from_position: 1, to_position: length });
    await until(
      async () => {
        const listed = await cliAsync(['webhooks', 'list', '--quotas', file, '--json']);
        return (JSON.parse(listed.stdout) as { delivered_through: number }[])[0]?.delivered_through === length;
      },
      30_000,
      500,
    );
    expect((await api(second.base, KEY.pro, 'GET', `/v1/webhooks/${id}`)).json.data).toMatchObject({
      delivered_through: length,
      pending: 0,
    });
    second.child.kill('SIGTERM');
    await second.exited;
    expect(second.child.exitCode).toBe(0);
    expectNoSecrets(first.stdout() + first.stderr() + second.stdout() + second.stderr(), r.got, 'serve’s output');
  }, 240_000);
});
