/**
 * A key's own terms at the edge (decision 106), under workerd: the limits of its KV entry are those of the rate-limit
 * headers, `/v1/usage` and the 429; a change written to KV is applied at the next key refresh with the counts kept;
 * `meta` is in no answer.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYS_REFRESH_MS } from '../../auth-shim/edge-keys.js';
import { LATE_MS, until } from '../helpers.js';
import { startEdge, type Edge } from './edge-setup.js';
import { builtTree } from './tree.js';

const KEY = 'rr_edge_key_with_its_own_terms';
const META = { customer: 'c_edge_secret_99' };
const entry = (limits: object) => ({
  sha256: createHash('sha256').update(KEY).digest('hex'),
  plan: 'pro',
  label: 'Acme',
  limits,
  meta: META,
});

describe('edge entry under workerd: a key of its own terms', () => {
  let edge: Edge;
  beforeAll(async () => {
    edge = await startEdge({ out: builtTree(), keys: JSON.stringify({ keys: [entry({ per_minute: 2, per_month: 321 })] }) });
  });
  afterAll(() => edge?.close());
  const get = (path = '/v1/assets/BTC/risk') => edge.call(path, { headers: { 'X-API-Key': KEY } });

  it("answers with the key's limits, refuses at its own per-minute limit, and takes a change at its refresh", async () => {
    const first = await get();
    expect(first.status).toBe(200);
    expect([first.headers.get('ratelimit-limit'), first.headers.get('x-ratelimit-requests-limit')]).toEqual(['2', '321']);
    const usage = await get('/v1/usage');
    const body = await usage.text();
    expect(JSON.parse(body).data.limits).toEqual({ per_minute: 2, per_month: 321 });
    const refused = await get();
    expect(refused.status).toBe(429);
    const text = await refused.text();
    expect(JSON.parse(text).error.message).toContain("this key's 2 requests per minute");
    for (const t of [body, text]) expect(t).not.toContain('c_edge_secret_99');

    await edge.putKeys(JSON.stringify({ keys: [entry({ per_minute: 50 })] }));
    expect(await until(async () => (await get()).headers.get('ratelimit-limit') === '50', KEYS_REFRESH_MS + LATE_MS, 200)).toBe(true);
    const after = JSON.parse(await (await get('/v1/usage')).text()).data;
    expect(after.limits).toEqual({ per_minute: 50, per_month: 50_000 });
    expect(after.month.used).toBeGreaterThanOrEqual(2);
  });
});
