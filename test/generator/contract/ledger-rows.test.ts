/**
 * A ledger's rows carried as their published file spelled them: read in place from a file this writer laid out
 * (anything else is refused, so it is parsed whole instead), parsed only where read, and written back, in the new
 * ledger and its first pages, exactly as the same rows as objects would be.
 */
import { describe, expect, it } from 'vitest';
import { blankRow, historyPage, ledger, type HistoryRow } from '../../../generator/api/history.js';
import { jsonWriter, toJson } from '../../../generator/contract/json.js';
import { LedgerRows, plainRows, PublishedRows } from '../../../generator/contract/ledger-rows.js';

const row = (date: string, basis: HistoryRow['basis'], price: number): HistoryRow => ({ ...blankRow(date, basis), price });
const rows = [
  row('2026-01-04', 'weekly_archive', 1.5),
  row('2026-01-11', 'weekly_archive', 2),
  row('2026-01-13', 'as_published', 2.25),
  row('2026-01-14', 'as_published', 3),
];
const published = ledger('BTC', rows, '2026-01-14T23:58:00Z', { twap_gravity_crypto: '1' });
const bytes = (text: string) => new TextEncoder().encode(text);
const file = bytes(toJson(published));
const text = (b: Uint8Array) => new TextDecoder().decode(b);

describe('PublishedRows.read', () => {
  it('reads a ledger this writer wrote in place: each row, its date and basis', () => {
    const read = PublishedRows.read(file)!;
    expect(read.asWritten).toBe(true);
    expect(read.length).toBe(4);
    expect([0, 1, 2, 3].map((i) => [read.date(i), read.basis(i)])).toEqual(rows.map((r) => [r.date, r.basis]));
    expect([0, 1, 2, 3].map((i) => read.row(i))).toEqual(rows);
    expect(read.row(1)).toBe(read.row(1)); // parsed once: a row is checked once however many files hold it
  });

  it('refuses a ledger laid out or spelled by another writer, so its rows are parsed and written anew', () => {
    expect(PublishedRows.read(bytes(JSON.stringify(published, null, 2)))).toBeNull();
    expect(PublishedRows.read(bytes(toJson(published).replace('{"date":"2026-01-14"', '{"date": "2026-01-14"')))).toBeNull();
    expect(PublishedRows.read(bytes(toJson(published).replace('{"date":"2026-01-04"', '{ "date":"2026-01-04"')))).toBeNull();
    expect(PublishedRows.read(bytes(toJson(published).replace('"total_row_count": 4', '"total_row_count": 5')))).toBeNull();
    expect(PublishedRows.read(bytes(toJson(published).replace('"total_row_count": 4', '"total_row_count": 3')))).toBeNull();
    expect(PublishedRows.read(bytes(toJson({ ...published, data: { ...published.data, rows: [] } })))).toBeNull();
    expect(PublishedRows.read(bytes(toJson(published) + 'trailing'))).toBeNull();
    const basisFirst = toJson(published).replace(
      '{"date":"2026-01-11","basis":"weekly_archive"',
      '{"basis":"weekly_archive","date":"2026-01-11"',
    );
    expect(PublishedRows.read(bytes(basisFirst))).toBeNull();
  });
});

describe('LedgerRows', () => {
  const carried = PublishedRows.read(file)!;
  const today = row('2026-01-15', 'as_published', 4);

  it('writes a continued ledger byte for byte as the same rows as objects, through toJson and jsonWriter', () => {
    for (const [head, added] of [
      [4, [today]],
      [3, [row('2026-01-14', 'as_published', 3.5)]],
      [4, []],
    ] as const) {
      const continued = ledger('BTC', new LedgerRows(carried, head, added), '2026-01-15T23:58:00Z', null);
      const asObjects = ledger('BTC', [...rows.slice(0, head), ...added], '2026-01-15T23:58:00Z', null);
      expect(toJson(continued)).toBe(toJson(asObjects));
      expect(text(jsonWriter()(continued))).toBe(toJson(asObjects));
      expect(continued.data.first_published).toBe('2026-01-13');
    }
  });

  it('cuts the same first pages as the rows as objects, and the same rows elsewhere in a document', () => {
    const continued = ledger('BTC', new LedgerRows(carried, 4, [today]), null, null);
    const asObjects = ledger('BTC', [...rows, today], null, null);
    for (const limit of [2, 4, 5, 90]) {
      const page = historyPage(continued, { limit, maxLimit: 90 });
      expect(toJson(page)).toBe(toJson(historyPage(asObjects, { limit, maxLimit: 90 })));
      expect(plainRows(page.data.rows)).toEqual([...rows, today].slice(0, limit));
    }
    // Inside another document the rows stand deeper than in their file: written from the parsed rows.
    expect(toJson({ example: { value: continued } })).toBe(toJson({ example: { value: asObjects } }));
  });

  it('writes rows parsed from a file of another layout as new rows', () => {
    const parsed = PublishedRows.parsed(rows);
    expect(parsed.asWritten).toBe(false);
    expect(toJson(ledger('BTC', new LedgerRows(parsed, 4, [today]), null, null))).toBe(toJson(ledger('BTC', [...rows, today], null, null)));
  });
});
