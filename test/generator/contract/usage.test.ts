/** The body of GET /v1/usage (decision 36), as the shim and the document's example make it. */
import { describe, expect, it } from 'vitest';
import { DISCLAIMER, usageBody } from '../../../generator/contract/index.js';

describe('usageBody', () => {
  const caller = { plan: 'pro' as const, credential: 'key:1a2b3c4d', label: 'Acme', expires: null };

  it('states the plan, its limits, and the minute and month from the counts, in the envelope with no reading', () => {
    const december = { minuteUsed: 3, resetMs: 41_200, monthUsed: 120, monthStart: Date.UTC(2026, 11, 1), monthEnd: Date.UTC(2027, 0, 1) };
    expect(usageBody(caller, december)).toEqual({
      as_of: null,
      model_version: null,
      disclaimer: DISCLAIMER,
      data: {
        plan: 'pro',
        credential: 'key:1a2b3c4d',
        label: 'Acme',
        expires_at: null,
        limits: { per_minute: 20, per_month: 50_000 },
        minute: { used: 3, remaining: 17, reset_seconds: 42 },
        month: { period: '2026-12', used: 120, remaining: 49_880, resets_at: '2027-01-01T00:00:00Z' },
      },
    });
  });

  it('gives the expiry as a UTC instant, never a remaining below zero, and null counts for the marketplace', () => {
    const over = { minuteUsed: 25, resetMs: 0, monthUsed: 60_000, monthStart: Date.UTC(2026, 9, 1), monthEnd: Date.UTC(2026, 10, 1) };
    const body = usageBody({ ...caller, expires: '2026-12-31T23:00:00+02:00' }, over);
    expect(body.data).toMatchObject({ expires_at: '2026-12-31T21:00:00Z', minute: { remaining: 0 }, month: { remaining: 0 } });
    expect(usageBody({ plan: 'ultra', credential: 'marketplace', label: null, expires: null }, null).data).toMatchObject({
      minute: null,
      month: null,
      limits: { per_minute: 60, per_month: 500_000 },
    });
  });
});
