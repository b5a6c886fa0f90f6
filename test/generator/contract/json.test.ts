/** Deterministic JSON: the tree's one format, written the same by toJson and by the build's shared-object writer. */
import { describe, expect, it } from 'vitest';
import { jsonWriter, toJson, writtenLines } from '../../../generator/contract/json.js';

const row = (date: string, price: number | null) => ({ date, basis: 'as_published', price });

describe('toJson', () => {
  it('indents structure two spaces, keeps plain objects and arrays on one line, drops undefined keys, ends with a newline', () => {
    expect(
      toJson({
        a: 1,
        skip: undefined,
        list: ['x', 'y'],
        data: { rows: [row('2026-01-01', 1.5), row('2026-01-02', null)], empty: [], none: {} },
      }),
    ).toBe(
      '{\n  "a": 1,\n  "list": ["x","y"],\n  "data": {\n    "rows": [\n      {"date":"2026-01-01","basis":"as_published","price":1.5},\n' +
        '      {"date":"2026-01-02","basis":"as_published","price":null}\n    ],\n    "empty": [],\n    "none": {}\n  }\n}\n',
    );
  });

  it('jsonWriter writes documents that share row objects byte for byte as toJson does', () => {
    const rows = Array.from({ length: 50 }, (_, i) => row(`2026-02-${String((i % 28) + 1).padStart(2, '0')}`, i));
    const full = { data: { rows } };
    const page = { data: { rows: rows.slice(-20), next_cursor: null } };
    const write = jsonWriter();
    expect([write(full), write(page), write(full)]).toEqual([toJson(full), toJson(page), toJson(full)]);
  });
});

describe('writtenLines', () => {
  const rows = [row('2026-01-01', 1.5), row('2026-01-02', null), row('2026-01-03', 2)];
  const doc = { as_of: null, data: { symbol: 'BTC', rows } };

  it('gives the text the writer gave each row, and jsonWriter writes those texts back byte for byte', () => {
    const text = toJson(doc);
    const parsed = JSON.parse(text) as typeof doc;
    const lines = writtenLines(text, 'rows', parsed.data.rows);
    expect(lines.map(([, line]) => line)).toEqual(rows.map((r) => JSON.stringify(r)));
    expect(lines.map(([item]) => item)).toEqual(parsed.data.rows);
    expect(jsonWriter(new WeakMap(lines))(parsed)).toBe(text);
  });

  it('jsonWriter writes a given text for its object instead of serialising it', () => {
    const parsed = JSON.parse(toJson(doc)) as typeof doc;
    const written = new WeakMap<object, string>([[parsed.data.rows[1]!, '{"given":true}']]);
    expect(jsonWriter(written)(parsed)).toContain('      {"given":true},\n');
  });

  it('gives nothing for a file another writer spelled, so no row is written in a spelling not its own', () => {
    const spaced = toJson(doc).replace(/\{"date":"(\d{4}-\d\d-\d\d)"/g, '{"date": "$1"');
    expect(writtenLines(spaced, 'rows', (JSON.parse(spaced) as typeof doc).data.rows)).toEqual([]);
    // Only the last row spelled otherwise: the check covers both ends.
    const lastSpaced = toJson(doc).replace('{"date":"2026-01-03"', '{"date": "2026-01-03"');
    expect(writtenLines(lastSpaced, 'rows', (JSON.parse(lastSpaced) as typeof doc).data.rows)).toEqual([]);
  });

  it('gives nothing when the rows are not one per line as the writer lays them out', () => {
    const compact = JSON.stringify(doc, null, 1);
    expect(writtenLines(compact, 'rows', rows)).toEqual([]);
    const text = toJson(doc);
    expect(writtenLines(text, 'rows', rows.slice(0, 2))).toEqual([]); // fewer items than lines
    expect(writtenLines(text, 'rows', [...rows, row('2026-01-04', 3)])).toEqual([]); // more
    expect(writtenLines(text, 'missing', rows)).toEqual([]);
    expect(writtenLines(text, 'rows', [])).toEqual([]);
  });
});
