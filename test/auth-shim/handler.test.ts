/** The runtime-neutral handler called directly: the shared suite, plus quotas on a controlled clock, 502 and 503. */
import { beforeAll, describe, expect, it } from 'vitest';
import { createHandler, type ShimOptions } from '../../auth-shim/handler.js';
import { FileOrigin } from '../../auth-shim/node/file-origin.js';
import { loadKeys } from '../../auth-shim/node/server.js';
import { MemoryQuotaStore } from '../../auth-shim/quota.js';
import type { Origin } from '../../auth-shim/origin.js';
import { expectError, minuteClock, rateLimitFields, shimSuite, type Call } from './suite.js';
import { KEY, KEYS_FILE, builtTree } from './tree.js';

let out = '';
let origin: FileOrigin;
const marketplace = { host: 'risk-readings.marketplace.example', secret: 'proxy-secret-for-tests' };

function client(extra: Partial<ShimOptions> = {}): Call {
  const handle = createHandler({ origin, keys: loadKeys(KEYS_FILE), marketplace, now: minuteClock(), ...extra });
  return (path, init = {}) => handle(new Request(`http://shim.test${path}`, { method: init.method ?? 'GET', headers: init.headers }));
}

let call: Call;
beforeAll(async () => {
  out = builtTree();
  origin = FileOrigin.open(out, 0);
  call = client();
});

shimSuite('fetch handler', () => ({ call, out }));

describe('fetch handler: quotas (decision 6)', () => {
  const basic = { 'X-API-Key': KEY.basic };

  it('counts per rolling minute: the sixth basic request within 60 s is 429 rate_limited, Retry-After until the oldest leaves', async () => {
    let t = Date.UTC(2026, 9, 14, 12, 0, 10);
    const c = client({ quotas: new MemoryQuotaStore(), now: () => t });
    for (let i = 0; i < 5; i++) {
      const ok = await c('/v1/assets/BTC/risk', { headers: basic });
      expect(ok.status).toBe(200);
      expect([ok.headers.get('ratelimit-limit'), ok.headers.get('ratelimit-remaining'), ok.headers.get('ratelimit-reset')]).toEqual([
        '5',
        String(4 - i),
        String(60 - 2 * i),
      ]);
      t += 2_000;
    }
    const limited = await c('/v1/assets/BTC/risk', { headers: basic });
    expect(limited.status).toBe(429);
    expect((await limited.json()).error.code).toBe('rate_limited');
    expect(limited.headers.get('retry-after')).toBe('50');
    expect(limited.headers.get('ratelimit-remaining')).toBe('0');
    // The IETF fields say the same (decision 40): the minute spent, back in 50 s; the month as it stands.
    expect(rateLimitFields(limited.headers)!.limit.get('minute')).toEqual({ r: 0, t: 50 });
    expect(rateLimitFields(limited.headers)!.limit.get('month')).toMatchObject({ r: 995 });
    t += 49_000;
    expect((await c('/v1/assets/BTC/risk', { headers: basic })).status).toBe(429);
    t += 1_000;
    expect((await c('/v1/assets/BTC/risk', { headers: basic })).status).toBe(200);
  });

  it('no double burst across a minute boundary (decision 21): five at :59.5, then five at :00.1 are refused', async () => {
    let t = Date.UTC(2026, 9, 14, 12, 0, 59, 500);
    const c = client({ quotas: new MemoryQuotaStore(), now: () => t });
    for (let i = 0; i < 5; i++) expect((await c('/v1/assets/BTC/risk', { headers: basic })).status).toBe(200);
    t = Date.UTC(2026, 9, 14, 12, 1, 0, 100);
    for (let i = 0; i < 5; i++) await expectError(await c('/v1/assets/BTC/risk', { headers: basic }), 429, 'rate_limited');
    t = Date.UTC(2026, 9, 14, 12, 1, 59, 501);
    expect((await c('/v1/assets/BTC/risk', { headers: basic })).status).toBe(200);
  });

  it('counts per calendar month (UTC): request 1,001 of a basic key is 429 quota_exceeded until the month turns', async () => {
    let t = Date.UTC(2026, 9, 31, 0, 0, 0);
    const c = client({ quotas: new MemoryQuotaStore(), now: () => t });
    for (let i = 0; i < 1000; i++) {
      if (i % 5 === 0) t += 60_000;
      expect((await c('/v1/assets/ETH/risk', { headers: basic })).status).toBe(200);
    }
    t += 60_000;
    const over = await c('/v1/assets/ETH/risk', { headers: basic });
    expect(over.status).toBe(429);
    expect((await over.json()).error.code).toBe('quota_exceeded');
    expect(Number(over.headers.get('retry-after'))).toBe(Math.ceil((Date.UTC(2026, 10, 1) - t) / 1000));
    // October has 31 days: the month's policy window, and none of it left until it turns.
    const fields = rateLimitFields(over.headers)!;
    expect(fields.policy.get('month')).toEqual({ q: 1000, w: 31 * 86_400 });
    expect(fields.limit.get('month')).toEqual({ r: 0, t: Math.ceil((Date.UTC(2026, 10, 1) - t) / 1000) });
    t = Date.UTC(2026, 10, 1, 0, 0, 1);
    expect((await c('/v1/assets/ETH/risk', { headers: basic })).status).toBe(200);
  });

  /**
   * A basic key's month spent on ETH's risk file on 2026-10-31 (its 1,000 requests, five a minute): the client, its
   * clock (a minute past the last request) and the ETag the last answer carried.
   */
  async function spentMonth() {
    const clock = { t: Date.UTC(2026, 9, 31, 0, 0, 0) };
    const c = client({ quotas: new MemoryQuotaStore(), now: () => clock.t });
    let etag = '';
    for (let i = 0; i < 1000; i++) {
      if (i % 5 === 0) clock.t += 60_000;
      const res = await c('/v1/assets/ETH/risk', { headers: basic });
      expect(res.status).toBe(200);
      etag = res.headers.get('etag')!;
    }
    clock.t += 60_000;
    return { c, clock, etag };
  }

  it('past a spent month a revalidation of a current copy is still 304, counted in the minute; an error goes out, data is quota_exceeded (decisions 35, 100)', async () => {
    const { c, clock, etag } = await spentMonth();
    await expectError(await c('/v1/assets/ETH/risk', { headers: basic }), 429, 'quota_exceeded');
    const current = { ...basic, 'If-None-Match': etag };
    for (const left of ['4', '3']) {
      const res = await c('/v1/assets/ETH/risk', { headers: current });
      expect(res.status).toBe(304);
      expect([res.headers.get('ratelimit-remaining'), res.headers.get('x-ratelimit-requests-remaining')]).toEqual([left, '0']);
    }
    const changed = await c('/v1/assets/ETH/risk', { headers: { ...basic, 'If-None-Match': '"not-current"' } });
    expect(await expectError(changed, 429, 'quota_exceeded')).toMatch(/the basic plan's 1000 requests this month \(UTC\)/);
    expect(Number(changed.headers.get('retry-after'))).toBe(Math.ceil((Date.UTC(2026, 10, 1) - clock.t) / 1000));
    // An error carries no data: it goes out as it is, counted in the minute alone (decision 100).
    await expectError(await c('/v1/assets/NOPE/risk', { headers: current }), 404, 'unknown_asset');
    // Where the caller stands, asked in the same minute: the month spent, the minute spent by the four above and this.
    const standing = (await (await c('/v1/usage', { headers: basic })).json()).data;
    expect([standing.month.used, standing.month.remaining, standing.minute.used]).toEqual([1000, 0, 5]);
    await expectError(await c('/v1/assets/ETH/risk', { headers: current }), 429, 'rate_limited');
    clock.t = Date.UTC(2026, 10, 1, 0, 0, 1);
    expect((await c('/v1/assets/ETH/risk', { headers: basic })).status).toBe(200);
  });

  it('past a spent month a HEAD is refused where the GET is, and a conditional HEAD of a current copy is 304 (decision 104)', async () => {
    const { c, clock, etag } = await spentMonth();
    const get = await c('/v1/assets/ETH/risk', { headers: basic });
    const head = await c('/v1/assets/ETH/risk', { method: 'HEAD', headers: basic });
    expect([get.status, head.status, await head.text()]).toEqual([429, 429, '']);
    for (const h of ['retry-after', 'x-ratelimit-requests-remaining']) expect(head.headers.get(h), h).toBe(get.headers.get(h));
    const current = await c('/v1/assets/ETH/risk', { method: 'HEAD', headers: { ...basic, 'If-None-Match': etag } });
    expect(current.status).toBe(304);
    // Neither touched the month; the next month's first HEAD is answered.
    clock.t = Date.UTC(2026, 10, 1, 0, 0, 1);
    expect((await c('/v1/assets/ETH/risk', { method: 'HEAD', headers: basic })).status).toBe(200);
  });

  it('every counted answer of a month of mixed traffic carries both IETF fields, and every 429 Retry-After (decision 104)', async () => {
    // A basic key through a month: data, revalidations, HEADs, refusals of each kind, bursts past the minute, then
    // past the month. Every answer the shim counts (it carries the minute's headers) must carry both fields.
    let t = Date.UTC(2026, 9, 1, 0, 0, 0);
    const c = client({ quotas: new MemoryQuotaStore(), now: () => t });
    const etag = (await c('/v1/assets/BTC/risk', { headers: basic })).headers.get('etag')!;
    const mix: [string, Record<string, string>, string?][] = [
      ['/v1/assets/BTC/risk', basic],
      ['/v1/assets/BTC/risk', { ...basic, 'If-None-Match': etag }],
      ['/v1/assets/BTC/risk', basic, 'HEAD'],
      ['/v1/assets/SPY/risk', basic],
      ['/v1/assets/NOPE/risk', basic],
      ['/v1/assets/BTC/history?from=yesterday', basic],
      ['/v1/usage', basic],
    ];
    const counted: Response[] = [];
    for (let i = 0, monthSpent = 0; monthSpent < 3; i++) {
      const [path, headers, method] = mix[i % mix.length]!;
      const res = await c(path, { headers, method });
      counted.push(res);
      if (res.status === 429 && res.headers.get('x-ratelimit-requests-remaining') === '0') monthSpent++;
      t += i % 9 === 8 ? 61_000 : 1_000; // bursts of nine: past the minute's five, then a minute's rest
    }
    const statuses = new Set(counted.map((r) => r.status));
    expect([...statuses].sort()).toEqual([200, 304, 400, 403, 404, 429]);
    const withBoth = counted.filter((r) => rateLimitFields(r.headers) !== null);
    const tooMany = counted.filter((r) => r.status === 429);
    console.log(
      `rate-limit fields: ${withBoth.length} of ${counted.length} counted answers carry both; ` +
        `${tooMany.filter((r) => r.headers.get('retry-after') === null).length} of ${tooMany.length} 429s lack Retry-After`,
    );
    expect(withBoth.length).toBe(counted.length);
    expect(tooMany.filter((r) => !(Number(r.headers.get('retry-after')) > 0))).toEqual([]);
    // Both windows were met: the minute's refusals and the month's.
    expect(tooMany.some((r) => r.headers.get('ratelimit-remaining') === '0')).toBe(true);
    expect(tooMany.some((r) => r.headers.get('x-ratelimit-requests-remaining') === '0')).toBe(true);
  });

  it('counts each credential on its own', async () => {
    const t = Date.UTC(2026, 9, 14, 12, 0, 0);
    const c = client({ quotas: new MemoryQuotaStore(), now: () => t });
    for (let i = 0; i < 5; i++) await c('/v1/assets/BTC/risk', { headers: basic });
    expect((await c('/v1/assets/BTC/risk', { headers: basic })).status).toBe(429);
    expect((await c('/v1/assets/BTC/risk', { headers: { 'X-API-Key': KEY.pro } })).status).toBe(200);
  });
});

describe('fetch handler: configuration and origin failures', () => {
  it('503 gateway_not_configured for data endpoints when no credential source is configured; health still answers', async () => {
    const handle = createHandler({ origin, keys: null });
    const res = await handle(new Request('http://shim.test/v1/assets/BTC/risk', { headers: { 'X-API-Key': KEY.pro } }));
    expect(res.status).toBe(503);
    expect((await res.json()).error.code).toBe('gateway_not_configured');
    // Every 503 says when to ask again (decision 40).
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await handle(new Request('http://shim.test/v1/health'))).status).toBe(200);
  });

  it('502 upstream_error when the origin lacks a file the catalogue says exists, or cannot be read', async () => {
    const holey: Origin = { get: (p) => (p === 'assets/ETH/risk.json' ? Promise.resolve(null) : origin.get(p)) };
    const broken: Origin = { get: () => Promise.reject(new Error('connection reset')) };
    for (const o of [holey, broken]) {
      const handle = createHandler({ origin: o, keys: loadKeys(KEYS_FILE) });
      const res = await handle(new Request('http://shim.test/v1/assets/ETH/risk', { headers: { 'X-API-Key': KEY.pro } }));
      expect(res.status).toBe(502);
      expect((await res.json()).error.code).toBe('upstream_error');
    }
  });

  it('a composed page gets its own ETag and a 304 on a match', async () => {
    const res = await call('/v1/assets/BTC/history?limit=3', { headers: { 'X-API-Key': KEY.pro } });
    const etag = res.headers.get('etag')!;
    expect(etag).toMatch(/^"[0-9a-f]{64}"$/);
    expect((await call('/v1/assets/BTC/history?limit=3', { headers: { 'X-API-Key': KEY.pro, 'If-None-Match': etag } })).status).toBe(304);
    expect((await call('/v1/assets/BTC/history?limit=4', { headers: { 'X-API-Key': KEY.pro } })).headers.get('etag')).not.toBe(etag);
  });
});

describe('fetch handler: health at request time (decision 26)', () => {
  const health = async (now: number, staleAfterMs?: number) => {
    const res = await client({ now: () => now, staleAfterMs })('/v1/health');
    return { status: res.status, etag: res.headers.get('etag'), body: await res.json() };
  };

  it('ok while the newest reading is younger than the limit, stale after it; always 200, each with its own ETag', async () => {
    const fresh = await health(Date.UTC(2026, 9, 16, 12));
    const newest = Date.parse(fresh.body.newest_reading);
    expect(fresh).toMatchObject({ status: 200, body: { status: 'ok' } });
    expect((await health(newest + 36 * 3_600_000)).body.status).toBe('ok');
    const stale = await health(newest + 36 * 3_600_000 + 1);
    expect(stale).toMatchObject({ status: 200, body: { ...fresh.body, status: 'stale' } });
    expect(stale.etag).not.toBe(fresh.etag);
    expect((await health(newest + 2 * 3_600_000, 3_600_000)).body.status).toBe('stale');
  });
});
