/** Step parameters, alone: the shapes of what the caller sent (decisions 4, 5, 9). */
import { describe, expect, it } from 'vitest';
import { bulkSymbols, historyQuery, symbolParam, universeParam } from '../../../auth-shim/steps/parameters.js';
import { refusalOf } from './refusals.js';

const q = (s: string) => new URLSearchParams(s);

describe('step: parameters', () => {
  it('a symbol and a universe of the right shape pass; others are 400 bad_symbol, bad_universe', async () => {
    expect(symbolParam('brk.b')).toBe('brk.b');
    expect((await refusalOf(() => symbolParam('BTC$')))?.code).toBe('bad_symbol');
    expect((await refusalOf(() => symbolParam('A'.repeat(21))))?.code).toBe('bad_symbol');
    expect(universeParam('Crypto')).toBe('Crypto');
    expect((await refusalOf(() => universeParam('cry pto')))?.code).toBe('bad_universe');
  });

  it('history: the plan caps the limit, dates are calendar dates, from after to is refused', async () => {
    expect(historyQuery(q(''), 'pro')).toEqual({ limit: 365, maxLimit: 1000 });
    expect(historyQuery(q(''), 'basic')).toEqual({ limit: 90, maxLimit: 90 });
    expect(historyQuery(q('limit=1000&from=2026-01-01&to=2026-02-01&cursor=2026-01-10'), 'basic')).toEqual({
      limit: 90,
      maxLimit: 90,
      from: '2026-01-01',
      to: '2026-02-01',
      cursor: '2026-01-10',
    });
    expect(historyQuery(q('limit=100.0'), 'pro').limit).toBe(100);
    for (const bad of [
      'limit=0',
      'limit=1001',
      'limit=1.5',
      'limit=100.',
      'limit=1e2',
      'from=2026-02-30',
      'from=2026-02-02&to=2026-02-01',
      'limit=5&limit=6',
    ])
      expect((await refusalOf(() => historyQuery(q(bad), 'ultra')))?.code, bad).toBe('bad_parameter');
  });

  it('bulk: 1 to 25 symbols of valid shape, stray commas dropped', async () => {
    expect(bulkSymbols(q('symbols=BTC,,eth,'))).toEqual(['BTC', 'eth']);
    expect((await refusalOf(() => bulkSymbols(q('symbols=,'))))?.code).toBe('bad_parameter');
    expect((await refusalOf(() => bulkSymbols(q(`symbols=${Array(26).fill('A').join(',')}`))))?.code).toBe('too_many_symbols');
    expect((await refusalOf(() => bulkSymbols(q('symbols=BTC,B@D'))))?.code).toBe('bad_symbol');
  });
});
