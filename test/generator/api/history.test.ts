import { describe, expect, it } from 'vitest';
import {
  archiveRows,
  blankRow,
  historyPage,
  HistoryLossError,
  ledger,
  checkLedgerKept,
  mergeRows,
  type HistoryRow,
  type Ledger,
} from '../../../generator/api/history.js';

const row = (date: string, basis: HistoryRow['basis'] = 'as_published', price = 1): HistoryRow => ({ ...blankRow(date, basis), price });

describe('mergeRows', () => {
  it('starts a ledger with the weekly archive before the first published day', () => {
    const { rows } = mergeRows('X', undefined, row('2026-10-13'), () => [
      row('2026-10-04', 'weekly_archive'),
      row('2026-10-11', 'weekly_archive'),
    ]);
    expect(rows.map((r) => `${r.date}/${r.basis}`)).toEqual([
      '2026-10-04/weekly_archive',
      '2026-10-11/weekly_archive',
      '2026-10-13/as_published',
    ]);
  });
  it('appends a later day, replaces the same day, and never rewrites an earlier one', () => {
    const prev = [row('2026-10-11', 'weekly_archive'), row('2026-10-13')];
    const merged = (today: HistoryRow) => mergeRows('X', prev, today, () => []).rows;
    expect(merged(row('2026-10-14'))).toEqual([...prev, row('2026-10-14')]);
    expect(merged(row('2026-10-13', 'as_published', 2))).toEqual([prev[0], row('2026-10-13', 'as_published', 2)]);
    const back = mergeRows('X', prev, row('2026-10-12'), () => []);
    expect(back.rows).toEqual(prev);
    expect(back.warning).toMatch(/not after the last history row/);
  });
  it("does not replace a weekly_archive row that shares today's date", () => {
    const prev = [row('2026-10-18', 'weekly_archive')];
    expect(mergeRows('X', prev, row('2026-10-18'), () => []).rows).toEqual(prev);
  });
  it('keeps every published row when no page gave a reading today', () => {
    const prev = [row('2026-10-11', 'weekly_archive'), row('2026-10-13')];
    expect(mergeRows('X', prev, null, () => []).rows).toEqual(prev);
  });
});

describe('checkLedgerKept', () => {
  const prev = [row('2026-10-11', 'weekly_archive'), row('2026-10-12'), row('2026-10-13')];
  it('passes every row kept in its place, a row appended, and the last as_published row replaced by one of its day', () => {
    expect(() => checkLedgerKept('X', prev, [...prev, row('2026-10-14')])).not.toThrow();
    expect(() => checkLedgerKept('X', prev, [...prev.slice(0, 2), row('2026-10-13', 'as_published', 9)])).not.toThrow();
    expect(() =>
      checkLedgerKept(
        'X',
        prev,
        prev.map((r) => ({ ...r })),
      ),
    ).not.toThrow();
  });
  it('refuses a row dropped, rewritten or moved, naming the asset and the row', () => {
    expect(() => checkLedgerKept('X', prev, prev.slice(0, 2))).toThrow(
      new HistoryLossError('X: row 2 (2026-10-13, as_published) would be dropped'),
    );
    expect(() => checkLedgerKept('X', prev, [prev[0]!, row('2026-10-12', 'as_published', 5), prev[2]!])).toThrow(/^X: row 1 \(2026-10-12/);
    expect(() => checkLedgerKept('X', prev, [prev[1]!, prev[2]!])).toThrow(/row 0 \(2026-10-11, weekly_archive\) would become 2026-10-12/);
    expect(() => checkLedgerKept('X', [row('2026-10-18', 'weekly_archive')], [row('2026-10-18')])).toThrow(HistoryLossError);
  });
});

describe('archiveRows', () => {
  it("merges each page's weekly samples by week, keeps only weeks before the first published day and drops empty weeks", () => {
    const rows = archiveRows(
      [
        { '2026-10-04': { price: 10 }, '2026-10-11': { price: 11 }, '2026-10-18': { price: 12 } },
        { '2026-10-04': { dca_band: '0.1-0.2', dca_risk: 0.15 }, '2026-09-27': { dca_band: null } },
      ],
      '2026-10-13',
    );
    expect(rows).toEqual([
      { ...row('2026-10-04', 'weekly_archive', 10), dca_band: '0.1-0.2', dca_risk: 0.15 },
      row('2026-10-11', 'weekly_archive', 11),
    ]);
  });
});

describe('historyPage', () => {
  const l = ledger(
    'X',
    ['2026-01-04', '2026-01-11', '2026-01-18', '2026-01-25', '2026-01-26'].map((d, i) =>
      row(d, i < 3 ? 'weekly_archive' : 'as_published', i),
    ),
    '2026-01-26',
    { a: '1' },
  ) as Ledger;

  it('walks every row exactly once by next_cursor, oldest first, null on the last page', () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let n = 0; n < 10; n++) {
      const p = historyPage(l, { limit: 2, maxLimit: 90, cursor });
      seen.push(...p.data.rows.map((r) => r.date));
      expect(p.data.row_count).toBe(p.data.rows.length);
      if (p.data.next_cursor === null) break;
      cursor = p.data.next_cursor;
    }
    expect(seen).toEqual(l.data.rows.map((r) => r.date));
  });
  it('treats from and to as inclusive and cursor as exclusive', () => {
    const p = historyPage(l, { limit: 10, maxLimit: 1000, from: '2026-01-11', to: '2026-01-25' });
    expect(p.data.rows.map((r) => r.date)).toEqual(['2026-01-11', '2026-01-18', '2026-01-25']);
    expect([p.data.from, p.data.through, p.data.total_row_count, p.data.next_cursor]).toEqual(['2026-01-11', '2026-01-25', 3, null]);
    expect(historyPage(l, { limit: 10, maxLimit: 1000, cursor: '2026-01-18' }).data.rows.map((r) => r.date)).toEqual([
      '2026-01-25',
      '2026-01-26',
    ]);
  });
  it('answers an empty window with nulls, not an error', () => {
    const p = historyPage(l, { limit: 5, maxLimit: 90, from: '2027-01-01' });
    expect([p.data.rows.length, p.data.from, p.data.through, p.data.next_cursor, p.data.limit, p.data.max_limit]).toEqual([
      0,
      null,
      null,
      null,
      5,
      90,
    ]);
  });
});
