/** Deterministic JSON: the tree's one format, written the same by toJson and by the build's shared-object writer. */
import { describe, expect, it } from 'vitest';
import { jsonWriter, toJson } from '../../../generator/contract/json.js';

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
