import { describe, expect, it } from 'vitest';
import {
  bandHolding,
  datesOf,
  decodeNumbers,
  lastPoint,
  pointAt,
  readFigures,
  series,
  traceNamed,
  traceNamedIfAny,
} from '../../../generator/site/plotly.js';
import { shortestFloat32 } from '../../../generator/site/plotly.js';
import { ArrayDates, DateColumn, allDates as allDatesOf, dayDate, dayNumber } from '../../../generator/site/dates.js';
import { customRow } from '../../../generator/site/plotly.js';

const b64 = (arr: ArrayBufferView) => Buffer.from(arr.buffer, arr.byteOffset, arr.byteLength).toString('base64');
const page = (traces: string) =>
  `<html><script>Plotly.newPlot(\n   "id-1",   ${traces},  {"layout":1}, {"responsive":true})</script></html>`;

describe('readFigures', () => {
  it('finds every newPlot call and parses its traces with the HTML escapes decoded', () => {
    const f64 = new Float64Array([1.5, NaN, 3]);
    const bdata = b64(f64).replace(/\//g, '\\u002f');
    const html =
      page(
        `[{"name":"A \\u003cb\\u003e","x":["2026-01-01T00:00:00.000000000","2026-01-02T00:00:00.000000000","2026-01-03T00:00:00.000000000"],"y":{"dtype":"f8","bdata":"${bdata}"}}]`,
      ) + page('[{"type":"indicator","value":3}]');
    const figs = readFigures(html, 'p.html');
    expect(figs).toHaveLength(2);
    expect(figs[0]!.traces[0]!.name).toBe('A <b>');
    const s = series(figs[0]!.traces[0]!, 'p.html');
    expect(allDatesOf(s.x)).toEqual(['2026-01-01', '2026-01-02', '2026-01-03']);
    expect(Array.from(s.values)).toEqual([1.5, NaN, 3]);
    expect(figs[1]!.traces[0]!.value).toBe(3);
  });

  it('copes with brackets and quotes inside strings', () => {
    const figs = readFigures(page('[{"name":"odd ] [ \\" }","y":[1,2]}]'), 'p.html');
    expect(figs[0]!.traces[0]!.name).toBe('odd ] [ " }');
  });

  it('names the file when the traces never close, even inside an unterminated string', () => {
    expect(() => readFigures('<script>Plotly.newPlot("id", [{"customdata":[["open string', 'cut.html')).toThrow(
      /cut\.html: Plotly\.newPlot: the traces array never closes/,
    );
  });

  it('names the file when the traces are not JSON', () => {
    expect(() => readFigures(page('[{"name": NaN}]'), 'bad.html')).toThrow(/bad\.html: Plotly\.newPlot: the traces array is not JSON/);
  });
});

describe('decodeNumbers', () => {
  const cases: [string, ArrayLike<number> & ArrayBufferView][] = [
    ['f8', new Float64Array([0.1, -2.5e10, 3])],
    ['f4', new Float32Array([0.5, -2, 3.25])],
    ['i1', new Int8Array([-128, 0, 127])],
    ['u1', new Uint8Array([0, 200, 255])],
    ['i2', new Int16Array([-32768, 5, 32767])],
    ['u2', new Uint16Array([0, 40000, 65535])],
    ['i4', new Int32Array([-2147483648, 7, 2147483647])],
    ['u4', new Uint32Array([0, 3000000000, 4294967295])],
  ];
  it.each(cases)('decodes dtype %s', (dtype, arr) => {
    const m = decodeNumbers({ dtype, bdata: b64(arr) }, 'f', 'y');
    expect(Array.from(m.data)).toEqual(Array.from(arr));
  });

  it('decodes a buffer that sits at an odd offset of its memory', () => {
    const raw = Buffer.alloc(1 + 16);
    new DataView(raw.buffer, raw.byteOffset).setFloat64(1, 42.25, true);
    new DataView(raw.buffer, raw.byteOffset).setFloat64(9, -1, true);
    const m = decodeNumbers({ dtype: 'f8', bdata: raw.subarray(1).toString('base64') }, 'f', 'y');
    expect(Array.from(m.data)).toEqual([42.25, -1]);
  });

  it('decodes 2-D shapes row-major and plain arrays (null as NaN)', () => {
    const m = decodeNumbers({ dtype: 'f8', bdata: b64(new Float64Array([1, 2, 3, 4, 5, 6])), shape: '3, 2' }, 'f', 'customdata');
    expect([m.rows, m.cols]).toEqual([3, 2]);
    expect(m.data[2 * 2 + 1]).toBe(6);
    const plain = decodeNumbers(
      [
        [1, null],
        [3, 4],
      ],
      'f',
      'customdata',
    );
    expect([plain.rows, plain.cols]).toEqual([2, 2]);
    expect(Number.isNaN(plain.data[1]!)).toBe(true);
    expect(Array.from(decodeNumbers([1, null, 2], 'f', 'y').data)).toEqual([1, NaN, 2]);
  });

  it('rejects what is not a number array, naming the field', () => {
    expect(() => decodeNumbers({ dtype: 'c16', bdata: '' }, 'f.html', 'trace "A" y')).toThrow(
      'f.html: trace "A" y: unknown typed-array dtype "c16"',
    );
    expect(() => decodeNumbers({ dtype: 'f8', bdata: 'AAAA' }, 'f.html', 'y')).toThrow(/not a whole number of f8/);
    expect(() => decodeNumbers({ dtype: 'f8', bdata: b64(new Float64Array(4)), shape: '3, 2' }, 'f.html', 'y')).toThrow(
      /does not match 4 values/,
    );
    expect(() => decodeNumbers(['a'], 'f.html', 'y')).toThrow(/expected a number, found "a"/);
  });
});

describe('series helpers', () => {
  const dated = (...values: number[]) => ({
    x: new ArrayDates(values.map((_, i) => `2026-01-0${i + 1}`)),
    values: Float64Array.from(values),
  });
  it('reads a series at its last point; gaps before it are gaps', () => {
    expect(lastPoint(dated(NaN, 1, NaN, 2), 'f', 's')).toEqual({ date: '2026-01-04', value: 2 });
  });
  it('refuses a last point that is no number, naming the page, the trace and what is there: never the point before it', () => {
    for (const [v, said] of [
      [NaN, 'NaN'],
      [Infinity, 'Infinity'],
      [-Infinity, '-Infinity'],
    ] as const)
      expect(() => lastPoint(dated(1, 2, v), 'X.html', 'trace "Price Trend"')).toThrow(
        `X.html: trace "Price Trend": the last point (2026-01-03) is ${said}, not a finite number`,
      );
    // A null in a plain array is decoded as NaN: refused the same way.
    const s = series({ name: 'P', x: ['2026-01-01', '2026-01-02'], y: [1, null] }, 'X.html');
    expect(() => lastPoint(s, 'X.html', 'trace "P"')).toThrow(/trace "P": the last point \(2026-01-02\) is NaN/);
    expect(() => lastPoint(dated(), 'X.html', 's')).toThrow(/holds no point/);
  });
  it('reads a line at a date: null where it has no point that day, refused where its point is no number', () => {
    expect(pointAt(dated(1, 2, 3), '2026-01-02', 'X.html', 'trace "L"')).toBe(2);
    expect(pointAt(dated(1, 2, 3), '2026-02-01', 'X.html', 'trace "L"')).toBeNull();
    expect(pointAt(dated(NaN, 2, 3), '2026-01-03', 'X.html', 'trace "L"', 2)).toBe(3);
    expect(() => pointAt(dated(1, 2, Infinity), '2026-01-03', 'X.html', 'trace "Peak Regression"')).toThrow(
      'X.html: trace "Peak Regression": the point at 2026-01-03 is Infinity, not a finite number',
    );
  });
  it('refuses a second trace of a name it reads by that name', () => {
    const traces = [{ name: 'Price Trend' }, { name: 'TWAP' }, { name: 'Price Trend' }];
    expect(() => traceNamed(traces, 'Price Trend', 'X.html')).toThrow(
      'X.html: trace "Price Trend": 2 traces of that name: which one to read is ambiguous',
    );
    expect(traceNamed(traces, 'TWAP', 'X.html')).toBe(traces[1]);
    expect(() =>
      traceNamedIfAny([{ name: 'Peak Regression' }, { name: 'Peak Euphoria' }], ['Peak Regression', 'Peak Euphoria'], 'X.html'),
    ).toThrow(/X\.html: trace "Peak Regression" or "Peak Euphoria": 2 traces/);
    expect(traceNamedIfAny(traces, 'Nothing', 'X.html')).toBeUndefined();
  });
  it('finds the band trace whose x holds a date', () => {
    const traces = [
      { name: 'Risk Level 1', x: ['2026-01-01T00:00:00.000000000'] },
      { name: 'Risk Level 2', x: ['2026-01-02T00:00:00.000000000', '2026-01-03T00:00:00.000000000'] },
    ];
    const hit = bandHolding(traces, /^Risk Level (\d+)$/, '2026-01-03', 'f')!;
    expect(hit.match[1]).toBe('2');
    expect(hit.index).toBe(1);
    expect(bandHolding(traces, /^Risk Level (\d+)$/, '2026-02-01', 'f')).toBeNull();
    expect(() => datesOf({ name: 'x', x: [1] }, 'f.html')).toThrow(/f\.html: trace "x" x: expected a date/);
  });
  it('refuses two bands holding the day it reads; two traces of one band (legend segments) are one band', () => {
    const day = '2026-01-03T00:00:00.000000000';
    const two = [
      { name: 'Risk Level 2', x: [day] },
      { name: 'Risk Level 9', x: [day] },
    ];
    expect(() => bandHolding(two, /^Risk Level (\d+)$/, '2026-01-03', 'X.html')).toThrow(
      'X.html: trace "Risk Level 9": holds 2026-01-03 as "Risk Level 2" does: the band there is ambiguous',
    );
    const segments = [
      { name: 'Risk Level 2', x: ['2026-01-01T00:00:00.000000000'] },
      { name: 'Risk Level 2', x: [day] },
    ];
    expect(bandHolding(segments, /^Risk Level (\d+)$/, '2026-01-03', 'X.html')!.trace).toBe(segments[1]);
  });
});

describe('float32 series', () => {
  it('decode to the shortest decimal that reads back as the same float32', () => {
    const f4 = new Float32Array([82.08, 0.1, 778.08, 1e-7, 3]);
    const m = decodeNumbers({ dtype: 'f4', bdata: Buffer.from(f4.buffer).toString('base64') }, 'X.html', 'y');
    expect([...m.data]).toEqual([82.08, 0.1, 778.08, 1e-7, 3]);
    for (let i = 0; i < f4.length; i++) expect(Math.fround(m.data[i]!)).toBe(f4[i]);
  });
  it('in an f8 array (as the real CRWV and SPY pages store their prices) decode as float32 do; other f8 values stay as stored', () => {
    // 82.08 and 771.35 as float32, widened to float64 by the page; then values that are no float32.
    const f8 = new Float64Array([Math.fround(82.08), Math.fround(771.35), 82.08, 0.1, 1234.5678901, 3, NaN]);
    const m = decodeNumbers({ dtype: 'f8', bdata: Buffer.from(f8.buffer).toString('base64') }, 'X.html', 'y');
    expect([...m.data]).toEqual([82.08, 771.35, 82.08, 0.1, 1234.5678901, 3, NaN]);
    expect(Math.fround(82.08)).toBe(82.08000183105469);
  });
  it('keep NaN and every float32 that needs all nine digits', () => {
    expect(shortestFloat32(NaN)).toBeNaN();
    const hard = Math.fround(16777217 / 3);
    expect(Math.fround(shortestFloat32(hard))).toBe(hard);
  });
});

describe('reading traces in place', () => {
  const day = (d: string) => `"${d}T00:00:00.000000000"`;
  it('reads a uniform date array in place and answers as the parsed strings would', () => {
    const x = ['2026-01-01', '2026-01-02', '2026-01-02', '2026-01-05'];
    const figs = readFigures(page(`[{"name":"A","x":[${x.map(day).join(',')}],"y":[1,2,3,4]}]`), 'p.html');
    const dates = datesOf(figs[0]!.traces[0]!, 'p.html');
    expect(dates).toBeInstanceOf(DateColumn);
    expect(allDatesOf(dates)).toEqual(x);
    expect([
      dates.lastIndexOf('2026-01-02'),
      dates.lastIndexOf('2026-01-05'),
      dates.lastIndexOf('2026-01-03'),
      dates.lastIndexOf('2026-01-0'),
    ]).toEqual([2, 3, -1, -1]);
    expect(dates.day(3) - dates.day(0)).toBe(4);
  });

  it('finds each key by its end, so key text inside a string value (escaped) is never taken for a key', () => {
    const dates = '["2026-01-01T00:00:00.000000000","2026-01-02T00:00:00.000000000"]';
    const f64 = new Float64Array([1, 2]);
    const tricky = `"hovertemplate":"see \\"x\\":[1] and \\"bdata\\":\\"AAAA\\" and \\"customdata\\":[[9]]"`;
    const [fig] = readFigures(page(`[{${tricky},"x":${dates},"y":{"dtype":"f8","bdata":"${b64(f64)}"}}]`), 'p.html');
    const trace = fig!.traces[0]!;
    expect(trace.hovertemplate).toBe('see "x":[1] and "bdata":"AAAA" and "customdata":[[9]]');
    expect(trace.x).toBeInstanceOf(DateColumn);
    expect(Array.from(series(trace, 'p.html').values)).toEqual([1, 2]);
    // A key that only ends like a kept one (`"ax"`) is JSON's to read.
    expect(readFigures(page(`[{"ax":${dates}}]`), 'p.html')[0]!.traces[0]!.ax).toEqual(JSON.parse(dates));
  });

  it('leaves dates of mixed lengths, and arrays that are not dates, to JSON', () => {
    const figs = readFigures(
      page(`[{"name":"A","x":["2026-01-01","2026-01-02T00:00"],"y":[1,2]},{"name":"B","x":[1,2],"y":[1,2]}]`),
      'p.html',
    );
    expect(figs[0]!.traces[0]!.x).toEqual(['2026-01-01', '2026-01-02T00:00']);
    expect(allDatesOf(datesOf(figs[0]!.traces[0]!, 'p.html'))).toEqual(['2026-01-01', '2026-01-02']);
    expect(() => datesOf(figs[0]!.traces[1]!, 'p.html')).toThrow(/p\.html: trace "B" x: expected a date, found 1/);
  });

  it('refuses a date array whose points are not all dates, naming the trace', () => {
    const figs = readFigures(page(`[{"name":"A","x":[${day('2026-01-01')},"20260102T00:00:00.000000000"],"y":[1,2]}]`), 'p.html');
    expect(() => datesOf(figs[0]!.traces[0]!, 'p.html')).toThrow(/p\.html: trace "A" x: expected a date, found "20260102/);
  });

  it('parses customdata only when a reading asks for it, and names the page when it is not JSON', () => {
    const good = readFigures(page(`[{"customdata":[[1,"a ] ["],[2,"b"]],"name":"A","x":[${day('2026-01-01')}],"y":[1]}]`), 'p.html');
    expect(good[0]!.traces[0]!.name).toBe('A');
    expect(() => customRow(good[0]!.traces[0]!, 0, 'p.html')).toThrow(/expected a number, found "a \] \["/);
    const bad = readFigures(page(`[{"customdata":[[1,2],[3,NaN]],"name":"A","x":[${day('2026-01-01')}],"y":[1]}]`), 'p.html');
    expect(() => customRow(bad[0]!.traces[0]!, 0, 'p.html')).toThrow(/p\.html: trace "A" customdata: not JSON/);
  });

  it('reads the same figures from bytes and from text, with byte offsets around the traces', () => {
    const html =
      `<p>σ — é</p>` + page(`[{"name":"Ω","x":[${day('2026-01-01')}],"y":{"dtype":"f8","bdata":"${b64(new Float64Array([7]))}"}}]`);
    const bytes = Buffer.from(html);
    const [fig] = readFigures(bytes, 'p.html');
    expect(fig!.traces[0]!.name).toBe('Ω');
    expect(bytes.toString('utf8', fig!.start, fig!.start + 1)).toBe('[');
    expect(bytes.toString('utf8', fig!.end - 1, fig!.end)).toBe(']');
    expect(Array.from(series(fig!.traces[0]!, 'p.html').values)).toEqual([7]);
  });
});

describe('day numbers', () => {
  it('count days since 1970-01-01 as Date does, across leap days and centuries', () => {
    for (const d of ['1970-01-01', '1969-12-31', '2000-02-29', '2000-03-01', '1900-03-01', '2024-02-29', '2026-12-31', '2100-02-28']) {
      expect(dayNumber(d)).toBe(Date.UTC(Number(d.slice(0, 4)), Number(d.slice(5, 7)) - 1, Number(d.slice(8))) / 86_400_000);
    }
    for (let n = -800; n < 80_000; n += 37) expect(dayNumber(dayDate(n))).toBe(n);
  });
});
