/** Step route, alone: GET and HEAD only (decisions 10 and 104), the API's routes, and nothing else. */
import { describe, expect, it } from 'vitest';
import { boundedQuery, readOnly, requestTarget, routeOf } from '../../../auth-shim/steps/route.js';
import { refusalOf } from './refusals.js';

const url = (path: string) => requestTarget(`http://api.test${path}`);

describe('step: route', () => {
  it('refuses every method but GET and HEAD with 405 and Allow: GET, HEAD', async () => {
    for (const method of ['POST', 'OPTIONS', 'DELETE', 'get']) {
      const r = await refusalOf(() => readOnly({ method }));
      expect(r).toMatchObject({ code: 'method_not_allowed', headers: { Allow: 'GET, HEAD' } });
    }
    for (const method of ['GET', 'HEAD']) expect(await refusalOf(() => readOnly({ method }))).toBeNull();
  });

  it('names the routes, decoding a segment once', () => {
    expect(routeOf(url('/v1/assets/btc/risk'))).toEqual({ name: 'risk', symbol: 'btc' });
    expect(routeOf(url('/v1/assets/BRK.B/history'))).toEqual({ name: 'history', symbol: 'BRK.B' });
    expect(routeOf(url('/v1/market/crypto/summary'))).toEqual({ name: 'summary', universe: 'crypto' });
    expect(routeOf(url('/v1/signals/dca/ETH'))).toEqual({ name: 'dca', symbol: 'ETH' });
    expect(routeOf(url('/v1/assets/%42TC/risk'))).toEqual({ name: 'risk', symbol: 'BTC' });
    expect(routeOf(url('/v1/assets/%E0%A4%A/risk'))).toEqual({ name: 'risk', symbol: '%E0%A4%A' });
    expect(['/v1/health', '/v1/openapi.json', '/v1/assets', '/v1/bulk/risk', '/v1/usage'].map((p) => routeOf(url(p)).name)).toEqual([
      'health',
      'openapi',
      'assets',
      'bulk',
      'usage',
    ]);
  });

  it('refuses any other path with 404 not_found, and an overlong query with 400', async () => {
    for (const p of ['/', '/v2/assets', '/v1/assets/BTC', '/v1/assets/BTC/risk/x', '/v1/usage/x', `/v1/${'a'.repeat(600)}`])
      expect((await refusalOf(() => routeOf(url(p))))?.code, p).toBe('not_found');
    expect((await refusalOf(() => boundedQuery(url(`/v1/assets?x=${'a'.repeat(2100)}`))))?.code).toBe('bad_parameter');
    expect(await refusalOf(() => boundedQuery(url('/v1/assets?x=1')))).toBeNull();
  });

  it('reads every request URL as the URL parser does, plain or not', () => {
    const targets = [
      '/v1/assets/BTC/risk',
      '/v1/assets/BRK.B/history',
      '//v1/assets/BTC/risk',
      '/v1/assets/BTC/risk/',
      '/v1/assets/%42TC/risk',
      '/v1/assets/../health',
      '/v1/./health',
      '/v1/assets/./BTC/risk',
      '/v1/.hidden',
      '/v1/assets/BTC/history?limit=5&from=2026-01-01',
      '/v1/assets/BTC/risk?',
      '/v1/assets/BTC/risk#part',
      '/v1/assets/b c/risk',
      '/v1/assets/BTC€/risk',
      '/v1/bulk/risk?symbols=BTC,ETH&symbols=SOL',
    ];
    for (const origin of ['http://api.test', 'https://user:pw@API.test:8443', 'http://127.0.0.1:8787'])
      for (const t of targets) {
        const [ours, parsed] = [requestTarget(origin + t), new URL(origin + t)];
        expect({ pathname: ours.pathname, search: ours.search, params: [...ours.searchParams] }, t).toEqual({
          pathname: parsed.pathname,
          search: parsed.search,
          params: [...parsed.searchParams],
        });
      }
  });

  it('reads a plain target asked again, or after thousands of other paths, as it read it first', async () => {
    const first = [url('/v1/assets/BTC/risk'), url('/v1/nowhere')];
    for (let i = 0; i < 10_000; i++) url(`/v1/assets/S${i}/risk`);
    for (const again of [url('/v1/assets/BTC/risk'), url('/v1/assets/BTC/risk')]) {
      expect(again.pathname).toBe('/v1/assets/BTC/risk');
      expect(routeOf(again)).toEqual({ name: 'risk', symbol: 'BTC' });
    }
    expect(routeOf(first[0]!)).toEqual({ name: 'risk', symbol: 'BTC' });
    expect(routeOf(url('/v1/assets/S9999/risk'))).toEqual({ name: 'risk', symbol: 'S9999' });
    for (const nowhere of [first[1]!, url('/v1/nowhere')]) expect((await refusalOf(() => routeOf(nowhere)))?.code).toBe('not_found');
  });

  it('gives each plain request query parameters of its own', () => {
    const [a, b] = [requestTarget('http://api.test/v1/changes'), requestTarget('http://api.test/v1/changes')];
    a.searchParams.append('limit', '5');
    expect([...b.searchParams]).toEqual([]);
  });
});
