/**
 * The fallback in front of a shared store (auth-shim/quota.ts, decision 21): what it owes is kept where a crash
 * cannot take it (decision 110), and an operator hears when keeping it fails and when it works again.
 */
import { describe, expect, it } from 'vitest';
import { chargeCount, FallbackQuotaStore, monthOf, type QuotaStore } from '../../auth-shim/quota.js';
import { until } from '../helpers.js';

describe('the fallback of a shared store', () => {
  it('keeps what it owes each second; a keep that fails is logged, and so is its return; nothing is kept once recorded', async () => {
    const logs: string[] = [];
    let [up, writable] = [false, false];
    const kept: number[] = [];
    const down = () => Promise.reject(new Error('the connection to Redis is down'));
    const shared: QuotaStore = {
      take: () => down(),
      refund: () => down(),
      record: (charges) => (up ? Promise.resolve(charges.length) : down()),
    };
    const store = new FallbackQuotaStore(shared, (m) => logs.push(m), {
      retryMs: 20,
      keep: (charges) => {
        if (!writable) throw new Error('EACCES: permission denied');
        kept.push(charges.length);
        return 'owed.json';
      },
    });
    const limits = { perMinute: 100, perMonth: 1_000 };
    const t = Date.now();
    expect((await store.take('k', limits, t, monthOf(t))).ok).toBe(true);
    await until(
      () => logs.some((l) => l.includes('cannot be kept on disk (EACCES: permission denied); a crash would lose them')),
      10_000,
      10,
    );
    writable = true;
    expect((await store.take('k', limits, t + 1, monthOf(t))).ok).toBe(true);
    await until(() => kept.length > 0, 10_000, 10);
    expect(kept[0]).toBe(2);
    expect(logs).toContain('quotas: the charges owed to the shared store are kept on disk again');
    up = true;
    await until(() => logs.some((l) => l.includes('the shared store is back; 2 charge(s)')), 10_000, 10);
    const keeps = kept.length;
    await new Promise((r) => setTimeout(r, 100));
    expect(kept.length).toBe(keeps); // nothing owed: no more keeps
    await store.close();
  });
  it('says each outage when it starts and when it ends, a second one a moment after the first included', async () => {
    const logs: string[] = [];
    let up = true;
    const down = () => Promise.reject(new Error('the connection to Redis is down'));
    // Takes only while it is down: once owed, requests are counted here until it is recorded.
    const shared: QuotaStore = {
      take: () => down(),
      refund: () => down(),
      record: (charges) => (up ? Promise.resolve(charges.length) : down()),
    };
    const store = new FallbackQuotaStore(shared, (m) => logs.push(m), { retryMs: 20, keep: () => 'owed.json' });
    const limits = { perMinute: 100, perMonth: 1_000 };
    const t = Date.now();
    const unreachable = () => logs.filter((l) => l.includes('cannot be reached')).length;
    const back = () => logs.filter((l) => l.includes('the shared store is back')).length;
    for (const outage of [1, 2]) {
      up = false;
      await store.take('k', limits, t + outage, monthOf(t));
      await store.take('k', limits, t + outage, monthOf(t));
      expect(unreachable()).toBe(outage);
      up = true;
      await until(() => back() === outage, 10_000, 10); // recorded by the retry each 20 ms, no request needed
    }
    expect(logs.filter((l) => l.includes('the shared store is back'))).toEqual([
      'quotas: the shared store is back; 2 charge(s) counted in this process meanwhile are recorded in it',
      'quotas: the shared store is back; 2 charge(s) counted in this process meanwhile are recorded in it',
    ]);
    await store.close();
  });
});

describe('a count of charges in a message', () => {
  it('is singular for one and plural otherwise', () => {
    expect([0, 1, 2, 7].map(chargeCount)).toEqual(['0 charges', '1 charge', '2 charges', '7 charges']);
  });
});
