/**
 * The guards on what a page's readings say: no date after --now by more than a day, none before 2000; no price ten
 * times up or down from the asset's last published one.
 */
import { describe, expect, it } from 'vitest';
import { pageGuard } from '../../../generator/site/guards.js';
import type { PageResult } from '../../../generator/site/readings.js';
import type { HistoryRow } from '../../../generator/contract/shapes.js';
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

describe('price move guard (decision 101)', () => {
  const row = (date: string, price: number | null, basis: 'as_published' | 'weekly_archive' = 'as_published') =>
    ({ date, basis, price }) as unknown as HistoryRow;
  const ledgers = new Map([['BTC', [row('2026-10-01', 70_000, 'weekly_archive'), row('2026-10-12', 82_000), row('2026-10-13', null)]]]);
  const gravity = { file: 'BTC_Price_TWAP_Gravity_Analysis.html', kind: 'crypto_gravity' as const, symbol: 'BTC' };
  const priced = (value: number, dca?: number) =>
    ({
      ...gravity,
      price: { value, currency: 'USD', source_page: gravity.file, date: '2026-10-13' },
      ...(dca === undefined ? {} : { dca: { price: dca } }),
    }) as unknown as PageResult;
  const guard = pageGuard(CATALOG, NOW, ledgers);

  it('passes a price within ten times of the last published one, either way', () => {
    expect(guard(priced(82_000 * 9.9), gravity)).toBeNull();
    expect(guard(priced(82_000 / 9.9), gravity)).toBeNull();
  });
  it("refuses one ten times up or down from the ledger's last published price, naming the page, the field and both prices", () => {
    expect(guard(priced(820_000), gravity)).toEqual({
      field: 'price.value',
      found:
        "820000 is 10 times up from BTC's last published price (82000 on 2026-10-12): no market moves 10 times between two publications",
      message:
        "BTC_Price_TWAP_Gravity_Analysis.html: price.value: 820000 is 10 times up from BTC's last published price (82000 on 2026-10-12): no market moves 10 times between two publications",
    });
    expect(guard(priced(5), gravity)?.found).toMatch(/^5 is 16400 times down from BTC's last published price \(82000 on 2026-10-12\)/);
    expect(guard(priced(82_000, 8_200), gravity)?.field).toBe('dca.price');
  });
  it('has nothing to measure from without a published price: a first build, an asset new to the ledger, no ledgers', () => {
    expect(pageGuard(CATALOG, NOW, new Map())(priced(5), gravity)).toBeNull();
    expect(pageGuard(CATALOG, NOW)(priced(5), gravity)).toBeNull();
    expect(pageGuard(CATALOG, NOW, new Map([['BTC', [row('2026-10-01', 70_000, 'weekly_archive')]]]))(priced(5), gravity)).toBeNull();
  });
});
