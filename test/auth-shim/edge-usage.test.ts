/**
 * Billing an edge deployment (decision 98) under workerd, bundled from wrangler.toml as deployed: requests counted in
 * the Durable Objects of two credentials across two months reach the quota directory, and `risk-readings usage
 * --quotas <the worker's URL>` (the compiled CLI, as an operator runs it, against the worker miniflare serves on a
 * loopback port) prints exactly what was admitted. The operator route answers only its token (no token or another is
 * the API's own 404), is never counted toward a quota and never cached. The counters here report 100 ms after a
 * change (edge-usage-worker.ts); the test waits for the totals to appear, not for a time.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliAsync, until } from '../helpers.js';
import { freePort } from '../services.js';
import { startEdge, type Edge } from './edge-setup.js';
import { KEY, KEYS_FILE, builtTree } from './tree.js';

const TOKEN = 'operator-token-for-the-edge-usage-test';
const OCT = Date.UTC(2026, 9, 20, 12);
const NOV = Date.UTC(2026, 10, 3, 9);
const sha = (key: string) => createHash('sha256').update(key).digest('hex');
const credential = (key: string) => `key:${sha(key)}`;
/** How long the totals may take to appear: generous, for a loaded machine; the test goes on as soon as they do. */
const WAIT_MS = 60_000;

let edge: Edge;
/** The worker's URL, as an operator gives it to `usage --quotas`. */
let worker = '';

beforeAll(async () => {
  edge = await startEdge({
    entry: 'test/auth-shim/edge-usage-worker.ts',
    out: builtTree(),
    keys: readFileSync(KEYS_FILE, 'utf8'),
    bindings: { OPERATOR_TOKEN: TOKEN },
  });
  worker = (await edge.mf.ready).toString();
});
afterAll(() => edge?.close());

/** A data request of `key` at `at` on the worker's clock. */
async function get(key: string, at: number, path = '/v1/assets/BTC/risk', headers: Record<string, string> = {}) {
  const res = await edge.call(path, { headers: { 'X-API-Key': key, 'x-test-clock': String(at), ...headers } });
  await res.arrayBuffer();
  return res;
}

/** `n` requests of `key` from `at`, one a second: how many were admitted (all but those refused 429). */
async function spend(key: string, at: number, n: number): Promise<number> {
  let admitted = 0;
  for (let i = 0; i < n; i++) if ((await get(key, at + i * 1_000)).status !== 429) admitted++;
  return admitted;
}

/** The operator route's answer for `month`, asked with `headers` (the token by default). */
const route = (month: string, headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` }) =>
  fetch(new URL(`/_operator/usage?month=${month}`, worker), { headers });

const totals = async (month: string) => ((await (await route(month)).json()) as { credentials: Record<string, number> }).credentials;

/** Totals in one order, to compare. */
const sorted = (t: Record<string, number>) => JSON.stringify(Object.entries(t).sort(([a], [b]) => (a < b ? -1 : 1)));

/** Waits until the directory answers `expected` for `month`; returns what it answered last. */
async function reported(month: string, expected: Record<string, number>): Promise<Record<string, number>> {
  let last: Record<string, number> = {};
  await until(async () => sorted((last = await totals(month))) === sorted(expected), WAIT_MS, 100);
  return last;
}

const usage = (args: string[], env: Record<string, string> = { RISK_READINGS_OPERATOR_TOKEN: TOKEN }) =>
  cliAsync(['usage', '--keys', KEYS_FILE, ...args], env);

describe('billing an edge deployment: the quota directory, the operator route and `usage`', () => {
  const admitted = { oct: { basic: 0, pro: 0 }, nov: { basic: 0, pro: 0 } };

  it('counts two credentials in two months, and the directory holds exactly what was admitted', async () => {
    // October: the basic key meets its per-minute limit (5), so two of its seven are refused and not counted.
    admitted.oct.basic = await spend(KEY.basic, OCT, 7);
    expect(admitted.oct.basic).toBe(5);
    admitted.oct.pro = await spend(KEY.pro, OCT, 3);
    // Neither a 304 (decision 35) nor the caller's own usage (decision 36) counts toward the month.
    const etag = (await get(KEY.pro, OCT + 10_000)).headers.get('etag')!;
    admitted.oct.pro++;
    expect((await get(KEY.pro, OCT + 11_000, '/v1/assets/BTC/risk', { 'If-None-Match': etag })).status).toBe(304);
    expect((await get(KEY.pro, OCT + 12_000, '/v1/usage')).status).toBe(200);
    // November: the month turns in both objects.
    admitted.nov.basic = await spend(KEY.basic, NOV, 2);
    admitted.nov.pro = await spend(KEY.pro, NOV, 4);
    expect(admitted).toEqual({ oct: { basic: 5, pro: 4 }, nov: { basic: 2, pro: 4 } });

    expect(await reported('2026-10', { [credential(KEY.basic)]: 5, [credential(KEY.pro)]: 4 })).toEqual({
      [credential(KEY.basic)]: 5,
      [credential(KEY.pro)]: 4,
    });
    expect(await reported('2026-11', { [credential(KEY.basic)]: 2, [credential(KEY.pro)]: 4 })).toEqual({
      [credential(KEY.basic)]: 2,
      [credential(KEY.pro)]: 4,
    });
    expect(await totals('2026-09')).toEqual({});
  });

  it('`usage --quotas <worker>` prints those totals beside the key file, as for a file or Redis', async () => {
    const r = await usage(['--quotas', worker, '--month', '2026-10', '--json']);
    expect(r.status, r.stderr).toBe(0);
    const keys = JSON.parse(readFileSync(KEYS_FILE, 'utf8')).keys as { sha256: string; plan: string; label: string }[];
    const expected = { [sha(KEY.basic)]: 5, [sha(KEY.pro)]: 4 };
    // The key's terms beside (decision 106) are keys.test.ts's; here, the counts.
    expect(JSON.parse(r.stdout)).toMatchObject(
      keys.map((k) => ({
        credential: `key:${k.sha256.slice(0, 8)}`,
        label: k.label,
        plan: k.plan,
        month: '2026-10',
        requests: expected[k.sha256] ?? 0,
        revoked: null,
      })),
    );
    expect(r.stderr).toBe(`2026-10 (UTC), counted in the edge's quota directory at ${worker} (up to a minute behind its counters)\n`);

    // The store from RISK_READINGS_QUOTAS, as serve takes it; the table and its total.
    const fromEnv = await usage(['--month', '2026-11'], { RISK_READINGS_QUOTAS: worker, RISK_READINGS_OPERATOR_TOKEN: TOKEN });
    expect(fromEnv.status, fromEnv.stderr).toBe(0);
    const lines = fromEnv.stdout.trimEnd().split('\n');
    expect(lines[1]).toMatch(new RegExp(`^key:${sha(KEY.basic).slice(0, 8)}\\s+basic\\s+2\\s`));
    expect(lines[2]).toMatch(new RegExp(`^key:${sha(KEY.pro).slice(0, 8)}\\s+pro\\s+4\\s`));
    expect(lines.at(-1)).toMatch(/^total\s+6$/);
  });

  it("answers only its token: none, another, or another scheme is the API's own 404, and `usage` exits 1 naming the URL", async () => {
    const notFound = await edge.call('/v1/no-such-route');
    const body = await notFound.text();
    expect(notFound.status).toBe(404);
    const refused: Record<string, string>[] = [
      {},
      { authorization: 'Bearer wrong-token' },
      { authorization: `Bearer ${TOKEN}x` },
      { authorization: `Bearer ${TOKEN.slice(0, -1)}` },
      { authorization: `Basic ${TOKEN}` },
      { authorization: TOKEN },
      { 'X-API-Key': KEY.ultra },
    ];
    for (const headers of refused) {
      const res = await route('2026-10', headers);
      expect(res.status, JSON.stringify(headers)).toBe(404);
      expect(await res.text()).toBe(body);
    }
    const r = await usage(['--quotas', worker, '--month', '2026-10'], { RISK_READINGS_OPERATOR_TOKEN: 'wrong-token' });
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      `risk-readings usage: ${worker}: the worker has no operator route for this token (404): RISK_READINGS_OPERATOR_TOKEN is not ` +
        'its OPERATOR_TOKEN, or that secret is not set (npx wrangler secret put OPERATOR_TOKEN, docs/edge.md)\n',
    );
    const away = `http://127.0.0.1:${await freePort()}/`;
    const unreachable = await usage(['--quotas', away, '--month', '2026-10']);
    expect(unreachable.status).toBe(1);
    expect(unreachable.stderr).toBe(`risk-readings usage: ${away}: the worker cannot be reached (ECONNREFUSED)\n`);
    // No token at all is usage: said before anything is asked.
    const none = await usage(['--quotas', worker, '--month', '2026-10'], {});
    expect(none.status).toBe(2);
    expect(none.stderr).toMatch(/reading an edge deployment needs its operator token: set RISK_READINGS_OPERATOR_TOKEN/);
  });

  it('is never counted toward a quota and never cached', async () => {
    const quotas = edge.objects('QUOTAS');
    const months = async (key: string) =>
      (await quotas.get(quotas.idFromName(credential(key))).fetch('https://quota.internal/months', {})).json();
    // Asked with a key of the API beside the token, on the clock of a month: the key's object counts nothing.
    for (let i = 0; i < 3; i++) {
      const res = await edge.call('/_operator/usage?month=2026-11', {
        headers: { authorization: `Bearer ${TOKEN}`, 'X-API-Key': KEY.ultra, 'x-test-clock': String(NOV) },
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect([...res.headers.keys()].filter((h) => /ratelimit/i.test(h))).toEqual([]);
      await res.arrayBuffer();
    }
    expect(await months(KEY.ultra)).toEqual({});
    expect(await totals('2026-11')).toEqual({ [credential(KEY.basic)]: 2, [credential(KEY.pro)]: 4 });
    // Each answer is the directory's as it stands: one more request is in the next answers, none is kept.
    expect((await get(KEY.pro, NOV + 60_000)).status).toBe(200);
    expect(await reported('2026-11', { [credential(KEY.basic)]: 2, [credential(KEY.pro)]: 5 })).toEqual({
      [credential(KEY.basic)]: 2,
      [credential(KEY.pro)]: 5,
    });
    const bad = await route('2026-13');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('bad_parameter');
  });
});
