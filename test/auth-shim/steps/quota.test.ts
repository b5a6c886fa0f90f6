/**
 * Step quota, alone: rate headers on every admitted request, 429 with Retry-After past the window (decision 6), and
 * the answer settling the month (decisions 35 and 100): a 304 or an error returns its charge, data past a spent
 * month is refused.
 */
import { describe, expect, it } from 'vitest';
import type { ShimResponse } from '../../../auth-shim/exchange.js';
import { MemoryQuotaStore } from '../../../auth-shim/quota.js';
import { answered, charged, monthUse, type Charged } from '../../../auth-shim/steps/quota.js';
import { refusalOf } from './refusals.js';

const caller = {
  plan: 'basic' as const,
  quotaKey: 'key:abc',
  id: 'key:abc',
  label: 'test',
  expires: null,
  expiry: Infinity,
  limits: { perMinute: 5, perMonth: 1_000 },
};
const NOW = Date.UTC(2026, 9, 14, 12, 0, 0);
const response = (status: number): ShimResponse => ({ status, headers: { ETag: '"t"' }, body: null, code: null });
/** The in-memory store answers at once. */
const now = (c: Charged | Promise<Charged>): Charged => {
  if (c instanceof Promise) throw new Error('the memory store answers synchronously');
  return c;
};

describe('step: quota', () => {
  it('admits five basic requests a minute with RateLimit headers, then refuses the sixth with rate_limited', async () => {
    const store = new MemoryQuotaStore();
    for (let i = 0; i < 5; i++)
      expect(charged(store, caller, NOW)).toMatchObject({ headers: { 'RateLimit-Limit': '5', 'RateLimit-Remaining': String(4 - i) } });
    const r = await refusalOf(() => charged(store, caller, NOW));
    expect(r).toMatchObject({ code: 'rate_limited', headers: { 'RateLimit-Remaining': '0' } });
    expect(Number(r!.headers['Retry-After'])).toBeGreaterThan(0);
  });

  it('charges nothing for a caller the marketplace counts for', () => {
    const store = new MemoryQuotaStore();
    for (let i = 0; i < 10; i++) expect(charged(store, { ...caller, quotaKey: null }, NOW)).toBeNull();
  });

  it('a request with If-None-Match is a revalidation; any other, a request', () => {
    const headers = (h: Record<string, string>) => ({ method: 'GET', url: 'http://api.test/v1/assets', headers: new Headers(h) });
    expect(monthUse(headers({ 'If-None-Match': '"t"' }))).toBe('revalidation');
    expect(monthUse(headers({}))).toBe('request');
  });

  it('a 304 returns the month its charge, and says so in its month header; a 200 keeps it', () => {
    const store = new MemoryQuotaStore();
    const first = now(charged(store, caller, NOW, 'revalidation'));
    expect(first!.headers['X-RateLimit-Requests-Remaining']).toBe('999');
    const notModified = answered(store, caller, first, response(304), NOW) as ShimResponse;
    expect(notModified.headers['X-RateLimit-Requests-Remaining']).toBe('1000');
    const second = now(charged(store, caller, NOW + 1, 'revalidation'));
    expect(answered(store, caller, second, response(200), NOW + 1)).toEqual(response(200));
    expect(store.totals(Date.UTC(2026, 9, 1)).get('key:abc')).toBe(1);
  });

  it('only data keeps the month: a 400, 403, 404 or 502 returns the charge of a request as a 304 does (decision 100)', () => {
    const store = new MemoryQuotaStore();
    for (const status of [400, 403, 404, 502]) {
      const c = now(charged(store, caller, NOW + status, 'request'));
      expect(c!.headers['X-RateLimit-Requests-Remaining']).toBe('999');
      const refused = answered(store, caller, c, response(status), NOW + status) as ShimResponse;
      expect(refused.headers['X-RateLimit-Requests-Remaining']).toBe('1000');
    }
    expect(store.totals(Date.UTC(2026, 9, 1)).get('key:abc') ?? 0).toBe(0);
    answered(store, caller, now(charged(store, caller, NOW + 1_000, 'request')), response(200), NOW + 1_000);
    expect(store.totals(Date.UTC(2026, 9, 1)).get('key:abc')).toBe(1);
  });

  it('past a spent month: a 304 or an error goes out, data is refused quota_exceeded with Retry-After to the next month', async () => {
    const store = new MemoryQuotaStore();
    for (let i = 0; i < 1000; i++)
      store.take('key:abc', { perMinute: 1e9, perMonth: 1e9 }, NOW - 10_000_000 + i, {
        start: Date.UTC(2026, 9, 1),
        end: Date.UTC(2026, 10, 1),
      });
    const c = now(charged(store, caller, NOW, 'revalidation'));
    expect(c!.admission).toMatchObject({ ok: true, monthCharged: false });
    const notModified = response(304);
    expect(answered(store, caller, c, notModified, NOW)).toBe(notModified);
    expect(c!.headers['X-RateLimit-Requests-Remaining']).toBe('0');
    for (const status of [200, 206]) {
      const r = await refusalOf(() => answered(store, caller, c, response(status), NOW));
      expect(r).toMatchObject({ code: 'quota_exceeded', headers: { 'Retry-After': String((Date.UTC(2026, 10, 1) - NOW) / 1000) } });
    }
    // An error carries no data: it goes out as it is (decision 100).
    const notFound = response(404);
    expect(answered(store, caller, c, notFound, NOW)).toBe(notFound);
    expect(store.totals(Date.UTC(2026, 9, 1)).get('key:abc')).toBe(1000);
  });
});
