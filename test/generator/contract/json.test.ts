/** Deterministic JSON: the tree's one format. */
import { describe, expect, it } from 'vitest';
import { toJson } from '../../../generator/contract/json.js';

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

  it('writes nested arrays of structure one element a line, and keys in the order they were built', () => {
    expect(toJson({ b: [{ x: [1] }, { y: { z: 2 } }], a: null })).toBe(
      '{\n  "b": [\n    {\n      "x": [1]\n    },\n    {\n      "y": {"z":2}\n    }\n  ],\n  "a": null\n}\n',
    );
  });

  it('is JSON: it parses back to the same value', () => {
    const value = { s: 'é "quoted" \u0000', n: [1.5, -0, 1e21], o: { deep: [{ a: [] }, {}] } };
    expect(JSON.parse(toJson(value))).toEqual(JSON.parse(JSON.stringify(value)));
  });
});
