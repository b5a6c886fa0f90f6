/** Step quota, alone: rate headers on every admitted request, 429 with Retry-After past the window (decision 6). */
import { describe, expect, it } from 'vitest';
import { MemoryQuotaStore } from '../../../auth-shim/quota.js';
import { charged } from '../../../auth-shim/steps/quota.js';
import { refusalOf } from './refusals.js';

const caller = { plan: 'basic' as const, quotaKey: 'key:abc', id: 'key:abc', label: 'test', expires: null, expiry: Infinity };
const NOW = Date.UTC(2026, 9, 14, 12, 0, 0);

describe('step: quota', () => {
  it('admits five basic requests a minute with RateLimit headers, then refuses the sixth with rate_limited', async () => {
    const store = new MemoryQuotaStore();
    for (let i = 0; i < 5; i++)
      expect(charged(store, caller, NOW)).toMatchObject({ 'RateLimit-Limit': '5', 'RateLimit-Remaining': String(4 - i) });
    const r = await refusalOf(() => charged(store, caller, NOW));
    expect(r).toMatchObject({ code: 'rate_limited', headers: { 'RateLimit-Remaining': '0' } });
    expect(Number(r!.headers['Retry-After'])).toBeGreaterThan(0);
  });

  it('charges nothing for a caller the marketplace counts for', () => {
    const store = new MemoryQuotaStore();
    for (let i = 0; i < 10; i++) expect(charged(store, { ...caller, quotaKey: null }, NOW)).toEqual({});
  });
});
