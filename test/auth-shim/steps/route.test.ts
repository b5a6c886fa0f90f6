/** Step route, alone: GET only (decision 10), the API's routes, and nothing else. */
import { describe, expect, it } from 'vitest';
import { boundedQuery, getOnly, routeOf } from '../../../auth-shim/steps/route.js';
import { refusalOf } from './refusals.js';

const url = (path: string) => new URL(`http://api.test${path}`);

describe('step: route', () => {
  it('refuses every method but GET with 405 and Allow: GET', async () => {
    for (const method of ['POST', 'HEAD', 'OPTIONS', 'DELETE']) {
      const r = await refusalOf(() => getOnly(new Request('http://api.test/v1/health', { method })));
      expect(r).toMatchObject({ code: 'method_not_allowed', headers: { Allow: 'GET' } });
    }
    expect(await refusalOf(() => getOnly(new Request('http://api.test/v1/health')))).toBeNull();
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
});
