/** A clock that moves a minute per request, so the suite's many requests never meet the per-minute quota. */
export function minuteClock(): () => number {
  let t = Date.UTC(2026, 9, 14, 0, 0, 0);
  return () => (t += 61_000);
}

/**
 * The shim's behaviour, stated once and run against every way it is deployed (the fetch handler itself, the
 * Node server over real HTTP). `call` sends a GET (or `method`) for a path with headers.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { parseList } from 'structured-headers';
import { describe, expect, it } from 'vitest';
import { DISCLAIMER } from '../../generator/contract/index.js';
import { KEY, KEYS_FILE, treeJson } from './tree.js';

type Doc = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** A body as sent, decoded per its Content-Encoding. */
async function decoded(res: Response): Promise<Buffer> {
  const bytes = Buffer.from(await res.arrayBuffer());
  const coding = res.headers.get('content-encoding');
  return coding === 'br' ? brotliDecompressSync(bytes) : coding === 'gzip' ? gunzipSync(bytes) : bytes;
}

/**
 * The IETF rate-limit fields of a response (decision 40), parsed as RFC 8941 lists by a parser of the RFC's own:
 * per policy name, its parameters; null where the response has none.
 */
export function rateLimitFields(h: Headers): { policy: Map<string, object>; limit: Map<string, object> } | null {
  const read = (name: string) => {
    const v = h.get(name);
    return v === null ? null : new Map(parseList(v).map(([item, params]) => [String(item), Object.fromEntries(params)]));
  };
  const [policy, limit] = [read('ratelimit-policy'), read('ratelimit')];
  if (!policy || !limit) {
    expect([policy, limit], 'one IETF field without the other').toEqual([null, null]);
    return null;
  }
  return { policy, limit };
}

export type Call = (path: string, init?: { headers?: Record<string, string>; method?: string }) => Promise<Response>;

const pro = { 'X-API-Key': KEY.pro };
/** A marketplace pair admitted by the proxy secret the test servers are configured with; the plan goes beside it. */
const PROXY_PAIR = {
  'x-marketplace-key': 'any-subscriber-key',
  'x-marketplace-host': 'risk-readings.marketplace.example',
  'x-marketplace-proxy-secret': 'proxy-secret-for-tests',
};
const basic = { 'X-API-Key': KEY.basic };
const ultra = { 'X-API-Key': KEY.ultra };

export async function expectError(res: Response, status: number, code: string) {
  expect(res.status).toBe(status);
  const body = await res.json();
  expect(body).toEqual({ error: { code, message: expect.any(String) }, disclaimer: DISCLAIMER });
  return body.error.message as string;
}

/**
 * Who chooses the content coding: the server, from the request's Accept-Encoding (the handler, the Node server), or
 * the runtime (a Workers runtime hands the worker `Accept-Encoding: gzip, br` whatever the client sent and decodes
 * for the client itself, so the worker always sends its br variant and the client sees no Content-Encoding).
 */
export type Coding = 'server' | 'runtime';

/** The ETag a plain request for a file of the tree is answered with, given who chooses the coding. */
function servedTag(out: string, path: string, coding: Coding): string {
  const entry = treeJson(out, '_manifest.json').files[path];
  return `"${coding === 'runtime' && entry.encodings ? entry.encodings.br.sha256 : entry.sha256}"`;
}

export function shimSuite(name: string, setup: () => { call: Call; out: string }, coding: Coding = 'server') {
  describe(`${name}: endpoints`, () => {
    it('health and the OpenAPI document need no key and are public', async () => {
      const { call, out } = setup();
      const h = await call('/v1/health');
      expect(h.status).toBe(200);
      expect(await h.json()).toEqual(treeJson(out, 'health.json'));
      expect(h.headers.get('cache-control')).toBe('public, max-age=60');
      const o = await call('/v1/openapi.json');
      expect((await o.json()).info.version).toBe('1.0.0');
    });

    it('serves the built files byte for byte with the manifest ETag, private caching and Vary', async () => {
      const { call, out } = setup();
      const res = await call('/v1/assets/BTC/risk', { headers: pro });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual(treeJson(out, 'assets/BTC/risk.json'));
      expect(res.headers.get('etag')).toBe(servedTag(out, 'assets/BTC/risk.json', coding));
      expect(res.headers.get('cache-control')).toBe('private, max-age=60');
      // Decision 20: Vary lists every header a credential can arrive in, neutral and the marketplace's own names;
      // decision 23 adds Accept-Encoding to a body that has compressed variants.
      expect(res.headers.get('vary')).toBe(
        'x-api-key, x-marketplace-key, x-marketplace-host, x-marketplace-proxy-secret, x-marketplace-subscription, x-rapidapi-key, x-rapidapi-host, x-rapidapi-proxy-secret, x-rapidapi-subscription, Accept-Encoding',
      );
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    });

    it('answers If-None-Match with 304 (strong, weak and * forms)', async () => {
      const { call } = setup();
      const etag = (await call('/v1/assets/ETH/risk', { headers: pro })).headers.get('etag')!;
      for (const inm of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
        const res = await call('/v1/assets/ETH/risk', { headers: { ...pro, 'If-None-Match': inm } });
        expect(res.status).toBe(304);
        expect(res.headers.get('etag')).toBe(etag);
        expect(await res.text()).toBe('');
      }
      expect((await call('/v1/assets/ETH/risk', { headers: { ...pro, 'If-None-Match': '"stale"' } })).status).toBe(200);
    });

    it('matches symbols case-insensitively and answers with the canonical symbol', async () => {
      const { call } = setup();
      const res = await call('/v1/assets/aero/risk', { headers: pro });
      expect(res.status).toBe(200);
      expect((await res.json()).data.symbol).toBe('AERO');
    });

    it('400 bad_symbol, 404 unknown_asset', async () => {
      const { call } = setup();
      await expectError(await call('/v1/assets/BT$C/risk', { headers: pro }), 400, 'bad_symbol');
      await expectError(await call(`/v1/assets/${'A'.repeat(21)}/risk`, { headers: pro }), 400, 'bad_symbol');
      await expectError(await call('/v1/assets/ZZZZ/risk', { headers: pro }), 404, 'unknown_asset');
      await expectError(await call('/v1/signals/dca/ZZZZ', { headers: pro }), 404, 'unknown_asset');
      await expectError(await call('/v1/assets/ZZ%20Z/history', { headers: pro }), 400, 'bad_symbol');
    });

    it('DCA signal for an asset with a regression model, 404 no_signal for one without', async () => {
      const { call, out } = setup();
      const ok = await call('/v1/signals/dca/spy', { headers: pro });
      expect(await ok.json()).toEqual(treeJson(out, 'signals/dca/SPY.json'));
      expect((await (await call('/v1/signals/dca/BTC', { headers: pro })).json()).data.multiplier).toBeNull();
      await expectError(await call('/v1/signals/dca/NVDA', { headers: pro }), 404, 'no_signal');
    });

    it('universe summaries: canonical name, 400 bad_universe, 404 unknown_universe', async () => {
      const { call, out } = setup();
      const res = await call('/v1/market/Quantum/summary', { headers: pro });
      expect(await res.json()).toEqual(treeJson(out, 'market/quantum/summary.json'));
      await expectError(await call('/v1/market/no%20such/summary', { headers: pro }), 400, 'bad_universe');
      await expectError(await call('/v1/market/defi/summary', { headers: pro }), 404, 'unknown_universe');
    });

    it('404 not_found for paths that are no endpoint', async () => {
      const { call } = setup();
      for (const p of [
        '/v1/nope',
        '/v2/health',
        '/v1/assets/BTC/risk/more',
        '/v1/assets/',
        '/',
        '/v1/_catalog.json',
        '/v1/_manifest.json',
        '/v1/assets/BTC/history/full.json',
      ]) {
        await expectError(await call(p, { headers: pro }), 404, 'not_found');
      }
    });

    it('405 method_not_allowed with Allow: GET, HEAD for every other method, on any path', async () => {
      const { call } = setup();
      for (const method of ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
        for (const p of ['/v1/health', '/v1/assets/BTC/risk', '/v1/nope']) {
          const res = await call(p, { method, headers: pro });
          expect(res.status, `${method} ${p}`).toBe(405);
          expect(res.headers.get('allow')).toBe('GET, HEAD');
          expect((await res.json()).error.code).toBe('method_not_allowed');
        }
      }
    });

    it('HEAD answers every GET route with the GET’s status and headers and no body, counted toward the minute alone (decision 104)', async () => {
      const { call } = setup();
      const paths = ['/v1/health', '/v1/openapi.json', '/v1/assets', '/v1/assets/BTC/risk', '/v1/assets/BTC/history?limit=3'];
      for (const p of [...paths, '/v1/assets/SPY/risk', '/v1/assets/NOPE/risk']) {
        const get = await call(p, { headers: basic });
        const getBytes = (await get.arrayBuffer()).byteLength;
        const head = await call(p, { method: 'HEAD', headers: basic });
        expect(head.status, p).toBe(get.status);
        expect((await head.arrayBuffer()).byteLength, p).toBe(0);
        for (const h of ['content-type', 'etag', 'cache-control', 'vary', 'content-encoding', 'ratelimit-limit', 'ratelimit-policy'])
          expect(head.headers.get(h), `${p} ${h}`).toBe(get.headers.get(h));
        // The length the GET's body has as sent (a runtime that decodes for the client says none).
        const length = head.headers.get('content-length');
        if (coding === 'server' && length !== null && get.headers.get('content-encoding') === null)
          expect(Number(length), p).toBe(getBytes);
      }
      // The month is spent by data alone: a HEAD leaves it as it stands, and counts toward the minute.
      const before = await call('/v1/assets/BTC/risk', { headers: basic });
      const head = await call('/v1/assets/BTC/risk', { method: 'HEAD', headers: basic });
      expect(head.headers.get('x-ratelimit-requests-remaining')).toBe(before.headers.get('x-ratelimit-requests-remaining'));
      expect(head.headers.get('ratelimit-limit')).toBe('5');
    });
  });

  if (coding === 'runtime')
    describe(`${name}: compression, the runtime choosing the coding (decision 23)`, () => {
      it("sends the build's br variant and its tag whatever the client accepts; the client gets the file's bytes", async () => {
        const { call, out } = setup();
        const path = 'assets/index.ultra.json';
        for (const accept of ['br, gzip', 'gzip', 'identity', '']) {
          const res = await call('/v1/assets', { headers: { ...ultra, 'Accept-Encoding': accept } });
          expect(res.status, accept).toBe(200);
          expect(res.headers.get('etag'), accept).toBe(servedTag(out, path, coding));
          expect(res.headers.get('vary'), accept).toMatch(/, Accept-Encoding$/);
          expect((await decoded(res)).equals(readFileSync(join(out, 'v1', path))), accept).toBe(true);
        }
        const small = await call('/v1/health');
        expect(small.headers.get('vary')).toBeNull();
      });

      it('compresses a composed body with the coding it has (gzip), tagged for it', async () => {
        const { call, out } = setup();
        const cut = await call('/v1/assets/ETH/history?limit=40&from=2026-01-01', { headers: pro });
        expect(cut.headers.get('etag')).toMatch(/-gzip"$/);
        const rows = treeJson(out, 'assets/ETH/history/full.json')
          .data.rows.filter((r: { date: string }) => r.date >= '2026-01-01')
          .slice(0, 40);
        expect(JSON.parse((await decoded(cut)).toString('utf8')).data.rows).toEqual(rows);
        const again = await call('/v1/assets/ETH/history?limit=40&from=2026-01-01', {
          headers: { ...pro, 'If-None-Match': cut.headers.get('etag')! },
        });
        expect(again.status).toBe(304);
      });
    });
  else
    describe(`${name}: compression (decision 23)`, () => {
      const file = (out: string, path: string) => readFileSync(join(out, 'v1', path));
      const manifestEntry = (out: string, path: string) => treeJson(out, '_manifest.json').files[path];

      it('sends a file over 1 KB as br when allowed (preferred), gzip when only that is, identity otherwise; each with its own ETag', async () => {
        const { call, out } = setup();
        const path = 'assets/index.ultra.json';
        const entry = manifestEntry(out, path);
        const seen = new Map<string | null, string>();
        for (const [accept, coding] of [
          ['br, gzip', 'br'],
          ['gzip, deflate', 'gzip'],
          ['gzip;q=1, br;q=0.5', 'gzip'],
          ['br;q=0, gzip;q=0', null],
          ['identity', null],
          ['*', 'br'],
          ['', null],
        ] as const) {
          const res = await call('/v1/assets', { headers: { ...ultra, 'Accept-Encoding': accept } });
          expect(res.status, accept).toBe(200);
          expect(res.headers.get('content-encoding'), accept).toBe(coding);
          expect(res.headers.get('vary'), accept).toMatch(/, Accept-Encoding$/);
          expect((await decoded(res)).equals(file(out, path)), accept).toBe(true);
          seen.set(coding, res.headers.get('etag')!);
        }
        expect(seen.get(null)).toBe(`"${entry.sha256}"`);
        expect(seen.get('br')).toBe(`"${entry.encodings.br.sha256}"`);
        expect(seen.get('gzip')).toBe(`"${entry.encodings.gzip.sha256}"`);
        expect(new Set(seen.values()).size).toBe(3);
      });

      it('If-None-Match matches the tag of any coding, and the 304 carries the tag of the coding asked for', async () => {
        const { call } = setup();
        const br = (await call('/v1/assets', { headers: { ...ultra, 'Accept-Encoding': 'br' } })).headers.get('etag')!;
        const gzip = await call('/v1/assets', { headers: { ...ultra, 'Accept-Encoding': 'gzip', 'If-None-Match': br } });
        expect(gzip.status).toBe(304);
        expect(gzip.headers.get('etag')).not.toBe(br);
        expect(gzip.headers.get('vary')).toMatch(/Accept-Encoding/);
      });

      it('leaves a body of 1 KB or less alone, and compresses composed bodies (history cuts, bulk) on the fly', async () => {
        const { call, out } = setup();
        const small = await call('/v1/health', { headers: { 'Accept-Encoding': 'br, gzip' } });
        expect(small.headers.get('content-encoding')).toBeNull();
        expect(small.headers.get('vary')).toBeNull();
        const cut = await call('/v1/assets/ETH/history?limit=40&from=2026-01-01', { headers: { ...pro, 'Accept-Encoding': 'gzip' } });
        expect(cut.headers.get('content-encoding')).toBe('gzip');
        const rows = treeJson(out, 'assets/ETH/history/full.json')
          .data.rows.filter((r: { date: string }) => r.date >= '2026-01-01')
          .slice(0, 40);
        expect(JSON.parse((await decoded(cut)).toString('utf8')).data.rows).toEqual(rows);
        const plain = await call('/v1/assets/ETH/history?limit=40&from=2026-01-01', { headers: pro });
        expect(plain.headers.get('content-encoding')).toBeNull();
        expect(plain.headers.get('etag')).not.toBe(cut.headers.get('etag'));
        expect(
          (
            await call('/v1/assets/ETH/history?limit=40&from=2026-01-01', {
              headers: { ...pro, 'Accept-Encoding': 'gzip', 'If-None-Match': plain.headers.get('etag')! },
            })
          ).status,
        ).toBe(304);
        const bulk = await call('/v1/bulk/risk?symbols=BTC,ETH', { headers: { ...pro, 'Accept-Encoding': 'gzip' } });
        expect(bulk.headers.get('content-encoding')).toBe('gzip');
        expect(JSON.parse((await decoded(bulk)).toString('utf8')).data.count).toBe(2);
      });
    });

  describe(`${name}: health and public documents (decisions 24, 26)`, () => {
    it('health carries built_at and newest_reading; it and the document may be read from any origin', async () => {
      const { call, out } = setup();
      const h = await call('/v1/health');
      const body = await h.json();
      expect(body).toMatchObject({
        status: 'ok',
        built_at: treeJson(out, '_manifest.json').built_at,
        newest_reading: expect.stringMatching(/^2026-10-\d\dT/),
      });
      expect(h.headers.get('access-control-allow-origin')).toBe('*');
      expect((await call('/v1/openapi.json')).headers.get('access-control-allow-origin')).toBe('*');
      expect((await call('/v1/assets', { headers: pro })).headers.get('access-control-allow-origin')).toBeNull();
    });

    it('a symbol that does not decode is 400 bad_symbol, not 404', async () => {
      const { call } = setup();
      await expectError(await call('/v1/signals/dca/%%%', { headers: pro }), 400, 'bad_symbol');
      await expectError(await call('/v1/assets/%E0%A4%A/risk', { headers: pro }), 400, 'bad_symbol');
      await expectError(await call('/v1/%%%', { headers: pro }), 404, 'not_found');
    });
  });

  describe(`${name}: credentials and plans`, () => {
    it('401 unauthorized without a valid credential, never echoing the key', async () => {
      const { call } = setup();
      const secretish = 'rr_wrong_key_12345';
      for (const headers of <Record<string, string>[]>[
        {},
        { 'X-API-Key': secretish },
        { 'X-API-Key': '' },
        { 'X-API-Key': 'x'.repeat(5000) },
        { 'x-marketplace-key': KEY.pro },
        { 'x-marketplace-key': KEY.pro, 'x-marketplace-host': 'wrong.example' },
      ]) {
        const res = await call('/v1/assets/BTC/risk', { headers });
        const text = await res.text();
        expect(res.status).toBe(401);
        expect(JSON.parse(text).error.code).toBe('unauthorized');
        expect(text).not.toContain(secretish);
        expect(text).not.toContain(KEY.pro);
        expect(res.headers.get('www-authenticate')).toBe('ApiKey header="X-API-Key"');
      }
    });

    it('every response carries X-Request-Id: the caller’s own when it is well formed, else a new one (decision 31)', async () => {
      const { call } = setup();
      const idOf = async (path: string, headers: Record<string, string>) => (await call(path, { headers })).headers.get('x-request-id');
      expect(await idOf('/v1/assets/BTC/risk', { ...pro, 'X-Request-Id': 'ticket-4711.a_b' })).toBe('ticket-4711.a_b');
      for (const [path, headers] of [
        ['/v1/assets/BTC/risk', pro],
        ['/v1/health', {}],
        ['/v1/assets/BTC/risk', {}],
        ['/v1/nope', pro],
        ['/v1/assets/BTC/risk', { ...pro, 'X-Request-Id': 'has spaces' }],
        ['/v1/assets/BTC/risk', { ...pro, 'X-Request-Id': 'x'.repeat(65) }],
      ] as [string, Record<string, string>][]) {
        const id = await idOf(path, headers);
        expect(id, path).toMatch(/^[0-9a-f-]{36}$/);
      }
      const a = await idOf('/v1/health', {});
      expect(await idOf('/v1/health', {})).not.toBe(a);
    });

    it("a counted response shows the month's quota beside the minute's (decision 32)", async () => {
      const { call } = setup();
      const month = async () => {
        const h = (await call('/v1/assets/BTC/risk', { headers: basic })).headers;
        return ['limit', 'remaining', 'reset'].map((k) => h.get(`x-ratelimit-requests-${k}`));
      };
      const [limit, first, reset] = await month();
      const [, second] = await month();
      expect(limit).toBe('1000');
      expect(Number(second)).toBe(Number(first) - 1);
      expect(Number(reset)).toBeGreaterThan(0);
      expect(Number(reset)).toBeLessThanOrEqual(31 * 86_400);
      // Keyless and marketplace-counted responses carry none: nothing of this gateway's counts applies to them.
      expect((await call('/v1/health')).headers.get('x-ratelimit-requests-limit')).toBeNull();
    });

    it('every counted response, a 304 and a refusal included, carries both windows in the IETF fields (decision 40)', async () => {
      const { call } = setup();
      const ok = await call('/v1/assets/BTC/risk', { headers: basic });
      const notModified = await call('/v1/assets/BTC/risk', { headers: { ...basic, 'If-None-Match': ok.headers.get('etag')! } });
      const refused = await call('/v1/assets/SPY/risk', { headers: basic });
      expect([ok.status, notModified.status, refused.status]).toEqual([200, 304, 403]);
      for (const res of [ok, notModified, refused]) {
        const fields = rateLimitFields(res.headers)!;
        const n = (name: string) => Number(res.headers.get(name));
        expect(fields.policy.get('minute')).toEqual({ q: 5, w: 60 });
        expect(fields.policy.get('month')).toEqual({ q: 1000, w: expect.any(Number) });
        expect([28, 29, 30, 31].map((d) => d * 86_400)).toContain((fields.policy.get('month') as { w: number }).w);
        // They say what the older headers say, window for window.
        expect(fields.limit.get('minute')).toEqual({ r: n('ratelimit-remaining'), t: n('ratelimit-reset') });
        expect(fields.limit.get('month')).toEqual({ r: n('x-ratelimit-requests-remaining'), t: n('x-ratelimit-requests-reset') });
        expect([...fields.policy.keys()]).toEqual([...fields.limit.keys()]);
      }
      // Keyless responses are counted nowhere and carry neither.
      expect(rateLimitFields((await call('/v1/health')).headers)).toBeNull();
    });

    it("the document declares the headers a data route's 304 carries, the rate-limit fields among them", async () => {
      const { call } = setup();
      const doc = (await (await call('/v1/openapi.json')).json()) as {
        paths: Record<string, { get: { responses: Record<string, { headers: Record<string, unknown> }> } }>;
      };
      const ok = await call('/v1/assets/BTC/risk', { headers: basic });
      const notModified = await call('/v1/assets/BTC/risk', { headers: { ...basic, 'If-None-Match': ok.headers.get('etag')! } });
      expect(notModified.status).toBe(304);
      const declared = Object.keys(doc.paths['/v1/assets/{symbol}/risk']!.get.responses['304']!.headers).map((h) => h.toLowerCase());
      const sent = [...notModified.headers.keys()];
      expect(sent).toEqual(expect.arrayContaining(declared));
      expect(declared).toEqual(expect.arrayContaining(sent.filter((h) => /ratelimit|^etag$|^vary$|^cache-control$/.test(h))));
    });

    it('a 401 names the credential forms the request tried (decision 33)', async () => {
      const { call } = setup();
      const message = async (headers: Record<string, string>) =>
        ((await (await call('/v1/assets/BTC/risk', { headers })).json()) as { error: { message: string } }).error.message;
      expect(await message({ 'X-API-Key': 'rr_wrong' })).toBe('The credential sent in X-API-Key is not valid');
      expect(await message({ 'X-RapidAPI-Key': 'k', 'X-RapidAPI-Host': 'nope.example' })).toBe(
        'The credential sent in the x-rapidapi-key and x-rapidapi-host pair is not valid',
      );
      expect(await message({ 'X-API-Key': 'rr_wrong', 'x-marketplace-key': 'k' })).toBe(
        'The credential sent in X-API-Key, and in the x-marketplace-key and x-marketplace-host pair is not valid',
      );
      expect(await message({})).toMatch(/^A valid X-API-Key header/);
    });

    it('an expired key is 401, saying when it expired and never which key; beside a valid pair, the pair alone authorises (decision 37)', async () => {
      const { call } = setup();
      const res = await call('/v1/assets/BTC/risk', { headers: { 'X-API-Key': KEY.expired } });
      const message = await expectError(res, 401, 'unauthorized');
      expect(message).toBe('The credential sent in X-API-Key is not valid: the key expired at 2026-02-01T00:00:00Z');
      expect(res.headers.get('www-authenticate')).toBe('ApiKey header="X-API-Key"');
      const pair = { 'x-marketplace-key': KEY.expired, 'x-marketplace-host': 'risk-readings.marketplace.example' };
      expect((await (await call('/v1/assets/BTC/risk', { headers: pair })).json()).error.message).toBe(
        'The credential sent in the x-marketplace-key and x-marketplace-host pair is not valid: the key expired at 2026-02-01T00:00:00Z',
      );
      // Decision 28: one valid credential beside one that is not authorises alone, here the proxy-secret pair.
      const beside = await call('/v1/assets/BTC/risk', {
        headers: { 'X-API-Key': KEY.expired, ...PROXY_PAIR, 'x-marketplace-subscription': 'BASIC' },
      });
      expect(beside.status).toBe(200);
      expect(beside.headers.get('ratelimit-limit')).toBeNull();
      // The expired key is refused on every data route alike, and the keyless ones still answer.
      await expectError(await call('/v1/changes', { headers: { 'X-API-Key': KEY.expired } }), 401, 'unauthorized');
      expect((await call('/v1/health', { headers: { 'X-API-Key': KEY.expired } })).status).toBe(200);
    });

    it('accepts the marketplace pair with a stored key, and either form when both are sent', async () => {
      const { call } = setup();
      const pair = { 'x-marketplace-key': KEY.pro, 'x-marketplace-host': 'risk-readings.marketplace.example' };
      expect((await call('/v1/assets/AERO/risk', { headers: pair })).status).toBe(200);
      expect((await call('/v1/assets/AERO/risk', { headers: { ...pair, 'X-API-Key': 'rr_wrong' } })).status).toBe(200);
      expect(
        (
          await call('/v1/assets/AERO/risk', {
            headers: { 'X-API-Key': KEY.pro, 'x-marketplace-key': 'rr_wrong', 'x-marketplace-host': 'nope' },
          })
        ).status,
      ).toBe(200);
    });

    it('a valid basic key beside a valid pro marketplace pair: the pro plan applies (decision 28)', async () => {
      const { call } = setup();
      const pair = { ...PROXY_PAIR, 'x-marketplace-subscription': 'PRO' };
      expect((await call('/v1/assets/AERO/risk', { headers: { 'X-API-Key': KEY.basic } })).status).toBe(403);
      for (let i = 0; i < 2; i++) {
        const res = await call('/v1/assets/AERO/risk', { headers: { 'X-API-Key': KEY.basic, ...pair } });
        expect(res.status).toBe(200);
        expect(res.headers.get('ratelimit-limit')).toBeNull(); // counted by the marketplace, whose plan applied
      }
    });

    it('accepts the marketplace proxy secret with the plan from x-marketplace-subscription, without counting quotas', async () => {
      const { call } = setup();
      const base = PROXY_PAIR;
      const res = await call('/v1/assets/AERO/risk', { headers: { ...base, 'x-marketplace-subscription': 'PRO' } });
      expect(res.status).toBe(200);
      expect(res.headers.get('ratelimit-limit')).toBeNull();
      await expectError(
        await call('/v1/assets/AERO/risk', { headers: { ...base, 'x-marketplace-subscription': 'BASIC' } }),
        403,
        'plan_required',
      );
      await expectError(
        await call('/v1/assets/AERO/risk', { headers: { ...base, 'x-marketplace-subscription': 'GOLD' } }),
        401,
        'unauthorized',
      );
      await expectError(
        await call('/v1/assets/AERO/risk', {
          headers: { ...base, 'x-marketplace-proxy-secret': 'wrong', 'x-marketplace-subscription': 'PRO' },
        }),
        401,
        'unauthorized',
      );
    });

    it("accepts the marketplace's real header names (X-RapidAPI-*) as shipped, by stored key and by proxy secret", async () => {
      const { call } = setup();
      const host = { 'X-RapidAPI-Host': 'risk-readings.marketplace.example' };
      expect((await call('/v1/assets/AERO/risk', { headers: { ...host, 'X-RapidAPI-Key': KEY.pro } })).status).toBe(200);
      const viaSecret = { ...host, 'X-RapidAPI-Key': 'any-subscriber-key', 'X-RapidAPI-Proxy-Secret': 'proxy-secret-for-tests' };
      const res = await call('/v1/assets/AERO/risk', { headers: { ...viaSecret, 'X-RapidAPI-Subscription': 'ULTRA' } });
      expect(res.status).toBe(200);
      expect(res.headers.get('ratelimit-limit')).toBeNull();
      await expectError(
        await call('/v1/assets/AERO/risk', { headers: { ...viaSecret, 'X-RapidAPI-Subscription': 'BASIC' } }),
        403,
        'plan_required',
      );
      await expectError(
        await call('/v1/assets/AERO/risk', { headers: { 'X-RapidAPI-Key': KEY.pro, 'X-RapidAPI-Host': 'wrong.example' } }),
        401,
        'unauthorized',
      );
    });

    it.each(['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', 'pro', ''])(
      'a subscription of %j is 401, never a plan (and never a 502)',
      async (sub) => {
        const { call } = setup();
        const base = {
          'x-marketplace-key': 'k',
          'x-marketplace-host': 'risk-readings.marketplace.example',
          'x-marketplace-proxy-secret': 'proxy-secret-for-tests',
          'x-marketplace-subscription': sub,
        };
        for (const path of ['/v1/assets', '/v1/assets/AERO/risk', '/v1/bulk/risk?symbols=BTC'])
          await expectError(await call(path, { headers: base }), 401, 'unauthorized');
      },
    );

    it("symbols that name prototype properties are unknown assets, not lookups into an object's prototype", async () => {
      const { call } = setup();
      for (const s of ['constructor', '__proto__', 'toString'])
        await expectError(await call(`/v1/assets/${s}/risk`, { headers: pro }), 404, 'unknown_asset');
      const bulk = await (await call('/v1/bulk/risk?symbols=constructor,__proto__,BTC', { headers: pro })).json();
      expect(bulk.data.missing).toEqual(['constructor', '__proto__']);
    });

    it('basic sees the free tier only: the asset list, risk, 403 naming the asset and plan', async () => {
      const { call, out } = setup();
      const list = await (await call('/v1/assets', { headers: basic })).json();
      const free = treeJson(out, '_catalog.json').free_tier;
      expect(list.data.tier).toBe('basic');
      expect(list.data.assets.map((a: { symbol: string }) => a.symbol)).toEqual([...free].sort());
      expect(list.data.total_asset_count).toBe(Object.keys(treeJson(out, '_catalog.json').assets).length);
      expect((await call('/v1/assets/BTC/risk', { headers: basic })).status).toBe(200);
      const message = await expectError(await call('/v1/assets/SPY/risk', { headers: basic }), 403, 'plan_required');
      expect(message).toMatch(/SPY/);
      expect(message).toMatch(/pro or ultra/);
      expect(message).toMatch(/top 10 crypto assets by market cap/);
      await expectError(await call('/v1/signals/dca/SPY', { headers: basic }), 403, 'plan_required');
      await expectError(await call('/v1/assets/SPY/history', { headers: basic }), 403, 'plan_required');
    });

    it('pro and ultra see every asset; the list says which tier', async () => {
      const { call } = setup();
      const p = await (await call('/v1/assets', { headers: pro })).json();
      const u = await (await call('/v1/assets', { headers: ultra })).json();
      expect([p.data.tier, u.data.tier]).toEqual(['pro', 'ultra']);
      expect(p.data.asset_count).toBe(p.data.total_asset_count);
    });

    it('summaries: basic reads crypto only (decision 9)', async () => {
      const { call } = setup();
      expect((await call('/v1/market/crypto/summary', { headers: basic })).status).toBe(200);
      await expectError(await call('/v1/market/quantum/summary', { headers: basic }), 403, 'plan_required');
    });
  });

  describe(`${name}: revalidation and the caller's own standing (decisions 35, 36)`, () => {
    /** What `keys list` shows of a demo key, and its label. */
    const stored = (key: string) => {
      const sha = createHash('sha256').update(key).digest('hex');
      const rec = (JSON.parse(readFileSync(KEYS_FILE, 'utf8')) as { keys: { sha256: string; label: string }[] }).keys.find(
        (k) => k.sha256 === sha,
      )!;
      return { credential: `key:${sha.slice(0, 8)}`, label: rec.label };
    };
    const monthLeft = (res: Response) => Number(res.headers.get('x-ratelimit-requests-remaining'));
    const usage = async (headers: Record<string, string>) => (await (await setup().call('/v1/usage', { headers })).json()).data;

    it('a 304 counts toward the minute and not the month: revalidating spends none of it', async () => {
      const { call } = setup();
      const first = await call('/v1/assets/BTC/risk', { headers: basic });
      const etag = first.headers.get('etag')!;
      const left = monthLeft(first);
      for (let i = 0; i < 3; i++) {
        const res = await call('/v1/assets/BTC/risk', { headers: { ...basic, 'If-None-Match': etag } });
        expect(res.status).toBe(304);
        // The month as it stands, and the minute that counted it.
        expect(monthLeft(res)).toBe(left);
        expect(res.headers.get('ratelimit-limit')).toBe('5');
      }
      expect((await usage(basic)).month.remaining).toBe(left);
      // A tag that is no longer current gets the data, which the month counts.
      const changed = await call('/v1/assets/BTC/risk', { headers: { ...basic, 'If-None-Match': '"not-current"' } });
      expect(changed.status).toBe(200);
      expect(monthLeft(changed)).toBe(left - 1);
      expect((await usage(basic)).month.remaining).toBe(left - 1);
    });

    it('only data counts toward the month: a 403, a 400 and a 404 count toward the minute and spare the month (decision 100)', async () => {
      const { call } = setup();
      const left = monthLeft(await call('/v1/assets/BTC/risk', { headers: basic }));
      const refusals: [string, number, string][] = [
        ['/v1/assets/SPY/risk', 403, 'plan_required'],
        ['/v1/assets/BTC/history?from=yesterday', 400, 'bad_parameter'],
        ['/v1/assets/NOPE/risk', 404, 'unknown_asset'],
      ];
      for (const [path, status, code] of refusals) {
        const res = await call(path, { headers: basic });
        await expectError(res, status, code);
        // Counted toward the minute (its headers say where the minute stands), the month as it stands.
        expect(res.headers.get('ratelimit-limit'), path).toBe('5');
        expect(monthLeft(res), path).toBe(left);
      }
      expect((await usage(basic)).month.remaining).toBe(left);
      expect(monthLeft(await call('/v1/assets/BTC/risk', { headers: basic }))).toBe(left - 1);
    });

    it('GET /v1/usage: plan, limits and counts in one call, counted in the minute and not the month, never cached', async () => {
      const { call } = setup();
      const res = await call('/v1/usage', { headers: pro });
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      const body = await res.json();
      const used: number = body.data.month.used;
      const period: string = body.data.month.period;
      const [y, m] = period.split('-').map(Number) as [number, number];
      expect(body).toEqual({
        as_of: null,
        model_version: null,
        disclaimer: DISCLAIMER,
        data: {
          plan: 'pro',
          ...stored(KEY.pro),
          expires_at: null,
          limits: { per_minute: 20, per_month: 50_000 },
          minute: { used: 1, remaining: 19, reset_seconds: 60 },
          month: { period, used, remaining: 50_000 - used, resets_at: new Date(Date.UTC(y, m, 1)).toISOString().replace('.000Z', 'Z') },
        },
      });
      expect(period).toMatch(/^\d{4}-\d{2}$/);
      // The headers say the same of the month, and of the minute that counted this call.
      expect(monthLeft(res)).toBe(50_000 - used);
      expect(res.headers.get('ratelimit-remaining')).toBe('19');
      expect((await usage(pro)).month.used).toBe(used);
      expect((await call('/v1/assets/BTC/risk', { headers: pro })).status).toBe(200);
      expect((await usage(pro)).month.used).toBe(used + 1);
    });

    it('GET /v1/usage needs a credential; a marketplace caller the proxy secret admits gets its plan, minute and month null', async () => {
      const { call } = setup();
      const refused = await call('/v1/usage');
      await expectError(refused, 401, 'unauthorized');
      expect(refused.headers.get('www-authenticate')).toBe('ApiKey header="X-API-Key"');
      const res = await call('/v1/usage', { headers: { ...PROXY_PAIR, 'x-marketplace-subscription': 'ULTRA' } });
      expect(res.status).toBe(200);
      expect(res.headers.get('ratelimit-limit')).toBeNull();
      expect((await res.json()).data).toEqual({
        plan: 'ultra',
        credential: 'marketplace',
        label: null,
        expires_at: null,
        limits: { per_minute: 60, per_month: 500_000 },
        minute: null,
        month: null,
      });
      // A marketplace pair whose key is stored is that key, counted here.
      const pair = { 'x-marketplace-key': KEY.basic, 'x-marketplace-host': 'risk-readings.marketplace.example' };
      expect(await usage(pair)).toMatchObject({ plan: 'basic', ...stored(KEY.basic), minute: { used: 1 } });
    });
  });

  describe(`${name}: history`, () => {
    it('serves the precomputed first page for the plan default, and the limit in effect', async () => {
      const { call, out } = setup();
      const p = await call('/v1/assets/BTC/history', { headers: pro });
      expect(await p.json()).toEqual(treeJson(out, 'assets/BTC/history/page-365.json'));
      expect(p.headers.get('etag')).toBe(servedTag(out, 'assets/BTC/history/page-365.json', coding));
      const b = await (await call('/v1/assets/BTC/history', { headers: basic })).json();
      expect([b.data.limit, b.data.max_limit]).toEqual([90, 90]);
      expect(b).toEqual(treeJson(out, 'assets/BTC/history/page-90.json'));
      const clamped = await (await call('/v1/assets/BTC/history?limit=500', { headers: basic })).json();
      expect([clamped.data.limit, clamped.data.max_limit, clamped.data.row_count]).toEqual([
        90,
        90,
        Math.min(90, clamped.data.total_row_count),
      ]);
      const big = await (await call('/v1/assets/BTC/history?limit=1000', { headers: ultra })).json();
      expect([big.data.limit, big.data.max_limit]).toEqual([1000, 1000]);
    });

    it('walks every row exactly once by next_cursor, and from/to are inclusive', async () => {
      const { call, out } = setup();
      const all = treeJson(out, 'assets/ETH/history/full.json').data.rows;
      const seen: unknown[] = [];
      let path = '/v1/assets/ETH/history?limit=7';
      for (let guard = 0; guard < 1000; guard++) {
        const page = (await (await call(path, { headers: pro })).json()).data;
        seen.push(...page.rows);
        expect(page.total_row_count).toBe(all.length);
        if (page.next_cursor === null) break;
        path = `/v1/assets/ETH/history?limit=7&cursor=${page.next_cursor}`;
      }
      expect(seen).toEqual(all);
      const from = all[3].date;
      const to = all[9].date;
      const window = (await (await call(`/v1/assets/ETH/history?from=${from}&to=${to}`, { headers: pro })).json()).data;
      expect(window.rows).toEqual(all.slice(3, 10));
      expect([window.from, window.through, window.next_cursor]).toEqual([from, to, null]);
    });

    it('400 bad_parameter for a malformed limit, date, order or repeated parameter', async () => {
      const { call } = setup();
      for (const q of [
        'limit=0',
        'limit=1001',
        'limit=abc',
        'limit=1.5',
        'limit=-3',
        'limit=',
        'from=2026-13-01',
        'to=yesterday',
        'cursor=2026-02-30',
        'from=2026-10-02&to=2026-10-01',
        'limit=5&limit=6',
      ]) {
        await expectError(await call(`/v1/assets/BTC/history?${q}`, { headers: basic }), 400, 'bad_parameter');
      }
    });
  });

  describe(`${name}: changes`, () => {
    const ledger = (out: string) => treeJson(out, 'changes/ledger.json') as { events: Doc[]; basic: number[]; started_at: string };

    it('pro walks every event of the refreshes once, oldest first, by next_cursor', async () => {
      const { call, out } = setup();
      const { events, started_at } = ledger(out);
      // The tree is three days of the small site: days 2 and 3 each raised events.
      expect(new Set(events.map((e) => e.published_at)).size).toBe(2);
      const seen: Doc[] = [];
      let path = '/v1/changes?limit=4';
      for (let guard = 0; guard < 100; guard++) {
        const res = await call(path, { headers: pro });
        expect(res.status).toBe(200);
        const page = await res.json();
        expect(page.disclaimer).toBe(DISCLAIMER);
        expect([page.data.started_at, page.data.total_event_count, page.data.max_limit]).toEqual([started_at, events.length, 1000]);
        seen.push(...page.data.events);
        if (page.data.next_cursor === null) break;
        path = `/v1/changes?limit=4&cursor=${page.data.next_cursor}`;
      }
      expect(seen).toEqual(events);
    });

    it('basic sees the events of its free-tier assets and of the crypto universe only, under its row cap', async () => {
      const { call, out } = setup();
      const { events, basic: positions } = ledger(out);
      const free: string[] = treeJson(out, '_catalog.json').free_tier;
      const body = await (await call('/v1/changes?limit=1000', { headers: basic })).json();
      expect([body.data.limit, body.data.max_limit]).toEqual([90, 90]);
      expect(body.data.events).toEqual(positions.map((i) => events[i]).slice(0, 90));
      expect(body.data.events.length).toBeGreaterThan(0);
      for (const e of body.data.events) expect(e.universe === 'crypto' || free.includes(e.symbol), JSON.stringify(e)).toBe(true);
      expect(events.some((e) => e.symbol && !free.includes(e.symbol))).toBe(true);
    });

    it("a daily job's window: from and to of one day give exactly that day's events", async () => {
      const { call, out } = setup();
      const { events } = ledger(out);
      const day = events.at(-1)!.published_at.slice(0, 10);
      const body = await (await call(`/v1/changes?from=${day}&to=${day}`, { headers: ultra })).json();
      expect(body.data.events).toEqual(events.filter((e) => e.published_at.startsWith(day)));
      expect(body.data.next_cursor).toBeNull();
      expect(body.as_of).not.toBeNull();
    });

    it('is counted and refused like any data route: no key 401, bad parameters 400', async () => {
      const { call } = setup();
      await expectError(await call('/v1/changes'), 401, 'unauthorized');
      for (const q of ['cursor=2026-10-14', 'cursor=-1', 'limit=0', 'from=2026-10-02&to=2026-10-01', 'cursor=1&cursor=2'])
        await expectError(await call(`/v1/changes?${q}`, { headers: pro }), 400, 'bad_parameter');
      const ok = await call('/v1/changes', { headers: pro });
      expect(ok.headers.get('ratelimit-limit')).toBe('20');
    });
  });

  describe(`${name}: bulk`, () => {
    it('one envelope over the covered symbols, requested echoed, missing listed', async () => {
      const { call, out } = setup();
      const res = await call('/v1/bulk/risk?symbols=btc,SPY,NOPE,AERO', { headers: pro });
      expect(res.status).toBe(200);
      const body = await res.json();
      expect(body.data.requested).toEqual(['btc', 'SPY', 'NOPE', 'AERO']);
      expect(body.data.missing).toEqual(['NOPE']);
      expect(body.data.count).toBe(3);
      expect(Object.keys(body.data.assets)).toEqual(['btc', 'SPY', 'AERO']);
      expect(body.data.assets.btc).toEqual(treeJson(out, 'assets/BTC/risk.json').data);
      expect(body.as_of).toBe(treeJson(out, 'assets/BTC/risk.json').as_of);
      expect(body.model_version).toMatchObject({ twap_gravity_crypto: '1', twap_gravity_equity: '1', dca_regression: '1' });
      expect(body.disclaimer).toBe(DISCLAIMER);
    });

    it('400 for no symbols, 26 symbols or a bad one; 403 for basic', async () => {
      const { call } = setup();
      await expectError(await call('/v1/bulk/risk', { headers: pro }), 400, 'bad_parameter');
      await expectError(await call('/v1/bulk/risk?symbols=,,', { headers: pro }), 400, 'bad_parameter');
      const many = Array.from({ length: 26 }, (_, i) => `S${i}`).join(',');
      await expectError(await call(`/v1/bulk/risk?symbols=${many}`, { headers: pro }), 400, 'too_many_symbols');
      expect((await call(`/v1/bulk/risk?symbols=${Array.from({ length: 25 }, () => 'BTC').join(',')}`, { headers: pro })).status).toBe(200);
      await expectError(await call('/v1/bulk/risk?symbols=BTC,B%2FD', { headers: pro }), 400, 'bad_symbol');
      await expectError(await call('/v1/bulk/risk?symbols=BTC', { headers: basic }), 403, 'plan_required');
    });
  });

  describe(`${name}: hostile input`, () => {
    it('never escapes the tree and never answers 5xx', async () => {
      const { call } = setup();
      const paths = [
        '/v1/assets/%2e%2e%2f_catalog.json/risk',
        '/v1/assets/..%2F..%2Fpackage.json/risk',
        '/v1/assets/BTC%00/risk',
        '/v1/assets/%E0%A4%A/risk',
        '/v1/../package.json',
        '/v1/assets/..',
        '/v1/market/..%2Fassets/summary',
        '/v1/signals/dca/..%2f..%2f_manifest.json',
        `/v1/assets/${'A'.repeat(5000)}/risk`,
        `/v1/assets/BTC/history?limit=${'9'.repeat(4000)}`,
        '/v1/assets/BTC/history?from=%00',
        '/v1/bulk/risk?symbols=%2e%2e,%00',
      ];
      for (const p of paths) {
        const res = await call(p, { headers: pro });
        expect(res.status, p).toBeGreaterThanOrEqual(400);
        expect(res.status, p).toBeLessThan(500);
        const text = await res.text();
        expect(text, p).not.toMatch(/"index"|"files"|"devDependencies"/);
      }
    });
  });
}
