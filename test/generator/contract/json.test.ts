/** Deterministic JSON: the tree's one format, written the same by toJson and by the build's shared-object writer. */
import { describe, expect, it } from 'vitest';
import { jsonWriter, PREWRITTEN, toJson } from '../../../generator/contract/json.js';

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
    const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
    expect([write(full), write(page), write(full)].map(text)).toEqual([toJson(full), toJson(page), toJson(full)]);
  });
});

describe('jsonWriter over long runs of one-line objects (a ledger and its pages)', () => {
  const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  const rows = Array.from({ length: 200 }, (_, i) => ({
    ...row(`2025-${String((i % 12) + 1).padStart(2, '0')}-01`, i % 7 ? i * 1.25 : null),
    // A multi-byte character in some rows: the run's offsets count bytes, not characters.
    band: i % 3 ? '0.1-0.2' : 'niveau é',
  }));
  const doc = (rows: unknown[]) => ({ data: { symbol: 'BTC', rows } });

  it('writes every slice of a run written before, at any indentation, as toJson does', () => {
    const write = jsonWriter();
    const docs = [
      doc(rows),
      doc(rows.slice(0, 90)),
      doc(rows.slice(37, 137)),
      doc(rows.slice(-64)),
      { deeper: doc(rows.slice(10, 110)) },
      doc([...rows.slice(0, 70)].reverse()),
      doc([...rows.slice(0, 70), rows[3]!, ...rows.slice(71, 140)]),
      doc([...rows.slice(0, 80), { nested: { a: 1 } }]),
      doc(rows.slice(0, 63)),
      doc(rows),
    ];
    expect(docs.map((d) => text(write(d)))).toEqual(docs.map((d) => toJson(d)));
  });

  it('copies the first elements of a run it met before, never serialising those rows twice', () => {
    const own = rows.map((r) => ({ ...r }));
    const write = jsonWriter();
    const first = text(write(doc(own)));
    own[80]!.price = -1; // documents must not change while the writer is in use: this shows the copy
    expect(text(write(doc(own.slice(0, 90))))).toBe(toJson(doc(rows.slice(0, 90))));
    expect(first).toBe(toJson(doc(rows)));
  });
});

describe('a Prewritten array', () => {
  const doc = (rows: unknown) => ({ as_of: null, data: { symbol: 'BTC', rows } });
  /** Gives its elements' text as one run of bytes and one string, as a carried ledger does. */
  const prewritten = (texts: string[]) => ({
    [PREWRITTEN]: (indent: string) => [new TextEncoder().encode(texts.slice(0, -1).join(`,\n${indent}`)), `,\n${indent}${texts.at(-1)}`],
  });
  const rows = [row('2026-01-01', 1.5), row('2026-01-02', null), row('2026-01-03', 2)];

  it('is laid out as the same elements as objects, by toJson and by jsonWriter, its bytes copied as given', () => {
    const asObjects = toJson(doc(rows));
    const given = doc(prewritten(rows.map((r) => JSON.stringify(r))));
    expect(toJson(given)).toBe(asObjects);
    expect(new TextDecoder().decode(jsonWriter()(given))).toBe(asObjects);
  });

  it('gives its elements the indentation of where it stands', () => {
    const nested = { deeper: doc(prewritten(['{"a":1}', '{"b":2}'])) };
    expect(toJson(nested)).toContain('      "rows": [\n        {"a":1},\n        {"b":2}\n      ]');
  });

  it('with no elements is written as an empty array', () => {
    expect(toJson(doc({ [PREWRITTEN]: () => [] }))).toContain('"rows": []');
  });

  it('keeps text beside it intact, NUL escapes included', () => {
    const tricky = { note: 'a\u0000b', rows: prewritten(['{"a":1}', '{"b":2}']), after: 'c\u00000\u0000d' };
    expect(toJson(tricky)).toBe(toJson({ note: 'a\u0000b', rows: [{ a: 1 }, { b: 2 }], after: 'c\u00000\u0000d' }));
  });
});
