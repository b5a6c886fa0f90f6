/** The guards on what a page's readings say of their dates: none after --now by more than a day, none before 2000. */
import { describe, expect, it } from 'vitest';
import { pageGuard } from '../../../generator/site/guards.js';
import type { PageResult } from '../../../generator/site/readings.js';
import { CATALOG } from '../../helpers.js';

const NOW = '2026-10-14T00:30:00Z';
const ref = { file: 'crypto_risk_normalized.html', kind: 'crypto_peak_valley' as const, symbol: null };
const stamped = (as_of: string) =>
  ({
    file: ref.file,
    kind: ref.kind,
    symbol: null,
    peak_valley: {
      score: 40,
      zone: 'Moderate Zone',
      series: 'leading_btc_eth',
      scope: 'market',
      model: 'm@1',
      as_of,
      as_of_basis: 'page_stamp',
      source_page: ref.file,
    },
  }) as unknown as PageResult;

describe('date guards', () => {
  const guard = pageGuard(CATALOG, NOW);
  it('accept a reading of today, and one years old (a series that stopped)', () => {
    expect(guard(stamped('2026-10-13T23:53:00Z'), ref)).toBeNull();
    expect(guard(stamped('2021-01-13T23:53:00Z'), ref)).toBeNull();
  });
  it('refuse a page stamped at the epoch, naming the file and the field', () => {
    expect(guard(stamped('1970-01-01T00:00:00Z'), ref)).toEqual({
      field: 'peak_valley.as_of',
      found: 'dated 1970-01-01T00:00:00Z, before 2000: no reading the site publishes is that old (a stamp at the epoch?)',
      message:
        'crypto_risk_normalized.html: peak_valley.as_of: dated 1970-01-01T00:00:00Z, before 2000: no reading the site publishes is that old (a stamp at the epoch?)',
    });
  });
  it('refuse a reading dated more than a day after --now', () => {
    expect(guard(stamped('2026-10-16T00:00:00Z'), ref)?.found).toMatch(/more than one day after --now/);
  });
});
