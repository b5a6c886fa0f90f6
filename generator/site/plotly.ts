import { ArrayDates, DateColumn, type Dates } from './dates.js';
import { PageError, describe } from './errors.js';

/** One Plotly trace as the page serialises it (keys sorted; `name` may be missing). */
export type Trace = Record<string, unknown> & { name?: string; x?: unknown; y?: unknown; customdata?: unknown };

export interface PlotlyFigure {
  traces: Trace[];
  /** Character range of the traces array in the page, so callers can drop it before reading the HTML. */
  start: number;
  end: number;
}

const NEW_PLOT = Buffer.from('Plotly.newPlot(');
/**
 * The end of an object key. Inside a JSON string a quote is escaped, and the values left in the bytes (dates,
 * base64, numbers) hold none followed by a colon, so every unescaped `":` ends a key: one search finds each key
 * in turn, where one search per key wanted ran through the values of the others (four passes over the page).
 */
const KEY_END = Buffer.from('":');
/** The keys whose values stay in the page's bytes, and the byte their value opens with. */
const KEPT_KEYS = [
  { kind: 'x', name: Buffer.from('"x'), opens: 0x5b /* [ */ },
  { kind: 'customdata', name: Buffer.from('"customdata'), opens: 0x5b },
  { kind: 'bdata', name: Buffer.from('"bdata'), opens: 0x22 /* " */ },
] as const;
const ARRAY_END = Buffer.from('],');
const BACKSLASH = 0x5c;

/** A typed array's base64 text, left in the page's bytes until a reading decodes it. */
class Base64Text {
  constructor(
    private readonly bytes: Buffer,
    private readonly start: number,
    private readonly end: number,
  ) {}
  decode(): Buffer {
    const text = this.bytes.toString('latin1', this.start, this.end);
    // Plotly may escape `/` as `\/` or `\u002f` inside the page's script: JSON unescapes what it wrote.
    return Buffer.from(text.includes('\\') ? (JSON.parse(`"${text}"`) as string) : text, 'base64');
  }
}

/** A JSON value left in the page's bytes (a trace's customdata: thousands of small rows most readings never use). */
class JsonText {
  constructor(
    private readonly bytes: Buffer,
    private readonly start: number,
    private readonly end: number,
    private readonly file: string,
  ) {}
  /** The value; `field` names it in the error when it is not JSON. */
  parse(field: string): unknown {
    try {
      return JSON.parse(this.bytes.toString('utf8', this.start, this.end));
    } catch (e) {
      throw new PageError(this.file, field, `not JSON (${(e as Error).message})`);
    }
  }
}

/** Stands in the JSON text for a value left in the page's bytes; a NUL key cannot come from the page's JSON. */
const HOLE = '\u0000';
const hole = (n: number) => `{${JSON.stringify(HOLE)}:${n}}`;

/** Puts each value left in the bytes back where its hole is. */
function fill(value: unknown, kept: unknown[]): unknown {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = fill(value[i], kept);
    return value;
  }
  if (value === null || typeof value !== 'object') return value;
  const o = value as Record<string, unknown>;
  if (HOLE in o) return kept[o[HOLE] as number];
  for (const k in o) o[k] = fill(o[k], kept);
  return o;
}

/**
 * The traces array whose `[` is at byte `start`, read without decoding most of it: arrays of dates become
 * DateColumns, base64 typed arrays Base64Texts and customdata JsonTexts over the page's bytes, and JSON.parse
 * reads the rest (a twentieth of the fixture site's bytes). Plotly writes `[traces], {layout}`: the first `],` followed by `{` whose prefix
 * parses is the array's end. null when that does not settle it in three tries (the caller then scans).
 */
function scanTraces(bytes: Buffer, start: number, file: string): { traces: unknown; end: number } | null {
  const text: string[] = [];
  const kept: unknown[] = [];
  let pos = start;
  /** Leaves bytes [from, to) out of the JSON text, with `value` in its place. */
  const keep = (from: number, to: number, value: unknown) => {
    text.push(bytes.toString('utf8', pos, from), hole(kept.length));
    kept.push(value);
    pos = to;
  };
  /** The next key at or after `after` whose value may stay in the bytes, with the offset of its value's first byte. */
  const nextKey = (after: number) => {
    for (let q = bytes.indexOf(KEY_END, Math.max(pos, after)); q >= 0; q = bytes.indexOf(KEY_END, q + 2)) {
      for (const k of KEPT_KEYS)
        if (bytes[q + 2] === k.opens && q >= k.name.length && bytes.compare(k.name, 0, k.name.length, q - k.name.length, q) === 0)
          return { kind: k.kind, open: q + 2 };
    }
    return null;
  };
  const nextEnd = (after: number) => bytes.indexOf(ARRAY_END, Math.max(pos, after));
  let key = nextKey(start);
  let close = nextEnd(start);
  for (let tries = 0; close >= 0 && tries < 3;) {
    if (key && key.open < close) {
      const { kind, open } = key;
      if (kind === 'x') {
        const column = DateColumn.at(bytes, open);
        if (column) keep(open, column.end, column.dates);
      } else if (kind === 'customdata') {
        const end = matchingEnd(bytes, open);
        if (end < 0) return null;
        keep(open, end, new JsonText(bytes, open, end, file));
      } else {
        const quote = bytes.indexOf(0x22, open + 1);
        if (quote < 0) return null;
        if (bytes[quote - 1] !== BACKSLASH) keep(open, quote + 1, new Base64Text(bytes, open + 1, quote));
      }
      key = nextKey(open + 1);
    } else {
      let k = close + 2;
      while (isSpace(bytes[k]!)) k++;
      if (bytes[k] === 123 /* { */) {
        tries++;
        try {
          const traces = JSON.parse(text.join('') + bytes.toString('utf8', pos, close + 1));
          return { traces: fill(traces, kept), end: close + 1 };
        } catch {
          // not the end: try the next candidate
        }
      }
      close = nextEnd(close + 2);
      continue;
    }
    if (close < pos) close = nextEnd(pos);
  }
  return null;
}

/** The slow path for a page that defeats scanTraces: the traces array up to its matching `]`, parsed whole. */
function parseTracesWhole(bytes: Buffer, start: number, file: string): { traces: unknown; end: number } {
  const end = matchingEnd(bytes, start);
  if (end < 0) throw new PageError(file, 'Plotly.newPlot', 'the traces array never closes');
  try {
    return { traces: JSON.parse(bytes.toString('utf8', start, end)), end };
  } catch (e) {
    throw new PageError(file, 'Plotly.newPlot', `the traces array is not JSON (${(e as Error).message})`);
  }
}

const isSpace = (c: number) => c === 32 || c === 10 || c === 13 || c === 9;

/**
 * End offset (exclusive) of the JSON array or object whose opening byte is at `start`, honouring strings; -1 when
 * it never closes. Structural characters are ASCII and no byte of a UTF-8 sequence is, so bytes need no decoding.
 */
function matchingEnd(bytes: Buffer, start: number): number {
  let depth = 0;
  for (let i = start; i < bytes.length; i++) {
    const c = bytes[i]!;
    if (c === 34 /* " */) {
      for (i++; i < bytes.length && bytes[i] !== 34; i++) if (bytes[i] === 92 /* \ */) i++;
    } else if (c === 91 /* [ */ || c === 123 /* { */) depth++;
    else if (c === 93 /* ] */ || c === 125 /* } */) {
      if (--depth === 0) return i + 1;
    }
  }
  return -1;
}

/** The page's bytes (a string is taken as its UTF-8). */
export const pageBytes = (page: Uint8Array | string): Buffer =>
  typeof page === 'string' ? Buffer.from(page) : Buffer.isBuffer(page) ? page : Buffer.from(page.buffer, page.byteOffset, page.byteLength);

/**
 * Every `Plotly.newPlot("<id>", [traces], ...)` call of a page. Scans the bytes for the call rather than building
 * a DOM or decoding the page: the traces are most of a page. `start`/`end` are byte offsets.
 */
export function readFigures(page: Uint8Array | string, file: string): PlotlyFigure[] {
  const bytes = pageBytes(page);
  const figures: PlotlyFigure[] = [];
  const found = (i: number, n = 20) => describe(bytes.toString('utf8', i, i + n));
  let at = bytes.indexOf(NEW_PLOT);
  while (at >= 0) {
    let i = at + NEW_PLOT.length;
    while (isSpace(bytes[i]!)) i++;
    const quote = bytes[i];
    if (quote !== 0x22 && quote !== 0x27) throw new PageError(file, 'Plotly.newPlot', `expected the div id, found ${found(i)}`);
    i = bytes.indexOf(quote, i + 1) + 1;
    while (isSpace(bytes[i]!) || bytes[i] === 0x2c) i++;
    if (bytes[i] !== 0x5b) throw new PageError(file, 'Plotly.newPlot', `expected the traces array, found ${found(i)}`);
    const { traces, end } = scanTraces(bytes, i, file) ?? parseTracesWhole(bytes, i, file);
    if (!Array.isArray(traces)) throw new PageError(file, 'Plotly.newPlot', 'traces are not an array');
    figures.push({ traces: traces as Trace[], start: i, end });
    at = bytes.indexOf(NEW_PLOT, end);
  }
  return figures;
}

/** The page's one figure: a page of a one-chart kind with no chart, or with two, is not the page it claims to be. */
export function readFigure(page: Uint8Array | string, file: string): PlotlyFigure {
  const figures = readFigures(page, file);
  if (figures.length !== 1) throw new PageError(file, 'Plotly.newPlot', `expected one Plotly chart, found ${figures.length}`);
  return figures[0]!;
}

const DTYPES = {
  f8: Float64Array,
  f4: Float32Array,
  i1: Int8Array,
  i2: Int16Array,
  i4: Int32Array,
  u1: Uint8Array,
  u2: Uint16Array,
  u4: Uint32Array,
} as const;

export interface Matrix {
  rows: number;
  cols: number;
  /** Row-major values; NaN marks a missing point. */
  data: Float64Array;
}

/** Decode a Plotly typed array (`{dtype, bdata, shape?}`) or a plain JSON array into float64 values. */
export function decodeNumbers(value: unknown, file: string, field: string): Matrix {
  if (value instanceof JsonText) value = value.parse(field);
  if (Array.isArray(value)) {
    const first = value[0];
    if (Array.isArray(first)) {
      const cols = first.length;
      const data = new Float64Array(value.length * cols);
      value.forEach((row, r) => {
        for (let c = 0; c < cols; c++) data[r * cols + c] = toNumber((row as unknown[])[c], file, field);
      });
      return { rows: value.length, cols, data };
    }
    return { rows: value.length, cols: 1, data: Float64Array.from(value, (v) => toNumber(v, file, field)) };
  }
  if (value && typeof value === 'object' && 'bdata' in value) {
    const { dtype, bdata, shape } = value as { dtype?: string; bdata?: unknown; shape?: unknown };
    const Ctor = DTYPES[dtype as keyof typeof DTYPES];
    if (!Ctor) throw new PageError(file, field, `unknown typed-array dtype ${describe(dtype)}`);
    if (typeof bdata !== 'string' && !(bdata instanceof Base64Text)) throw new PageError(file, field, 'typed array without bdata');
    const bytes = typeof bdata === 'string' ? Buffer.from(bdata, 'base64') : bdata.decode();
    if (bytes.byteLength % Ctor.BYTES_PER_ELEMENT !== 0)
      throw new PageError(file, field, `bdata length ${bytes.byteLength} is not a whole number of ${dtype}`);
    // Copy into a fresh, aligned buffer: a Buffer from the pool may sit at an odd offset.
    const aligned = new Uint8Array(bytes.byteLength);
    aligned.set(bytes);
    const typed = new Ctor(aligned.buffer);
    if (typed instanceof Float64Array) for (let i = 0; i < typed.length; i++) typed[i] = float32Valued(typed[i]!);
    const data =
      typed instanceof Float64Array
        ? typed
        : typed instanceof Float32Array
          ? Float64Array.from(typed, shortestFloat32)
          : Float64Array.from(typed as ArrayLike<number>);
    let rows = data.length;
    let cols = 1;
    if (shape !== undefined) {
      const dims = String(shape)
        .split(',')
        .map((s) => Number(s.trim()));
      if (dims.length === 2 && dims.every(Number.isInteger)) [rows, cols] = dims as [number, number];
      else if (!(dims.length === 1 && dims[0] === data.length)) throw new PageError(file, field, `unreadable shape ${describe(shape)}`);
      if (rows * cols !== data.length) throw new PageError(file, field, `shape ${describe(shape)} does not match ${data.length} values`);
    }
    return { rows, cols, data };
  }
  throw new PageError(file, field, `expected a number array, found ${describe(typeof value === 'object' ? JSON.stringify(value) : value)}`);
}

/**
 * An f8 value that is exactly a float32 was a float32 before the page stored it (some equity pages' price series):
 * published as that float32's shortest decimal, as an f4 value is (decision 30). Any other value is as stored.
 */
const float32Valued = (x: number): number => (Math.fround(x) === x ? shortestFloat32(x) : x);

/**
 * A float32 as the shortest decimal that reads back as the same float32 (decision 30): the page's `82.08`
 * is stored as 82.08000183105469, which would otherwise print as 82.080002.
 */
export function shortestFloat32(x: number): number {
  if (!Number.isFinite(x)) return x;
  for (let p = 1; p < 9; p++) {
    const candidate = Number(x.toPrecision(p));
    if (Math.fround(candidate) === x) return candidate;
  }
  return x;
}

function toNumber(v: unknown, file: string, field: string): number {
  if (v === null) return NaN;
  if (typeof v === 'number') return v;
  throw new PageError(file, field, `expected a number, found ${describe(v)}`);
}

/** A 1-D series of numbers. */
function numbers(value: unknown, file: string, field: string): Float64Array {
  const m = decodeNumbers(value, file, field);
  if (m.cols !== 1) throw new PageError(file, field, `expected a 1-D series, found shape ${m.rows}, ${m.cols}`);
  return m.data;
}

/** The x dates of a trace: read in place from the page (DateColumn) or checked from a parsed array. */
export function datesOf(trace: Trace, file: string): Dates {
  const x = trace.x;
  if (x instanceof DateColumn) return x;
  const field = `trace "${trace.name ?? '(unnamed)'}" x`;
  if (!Array.isArray(x)) throw new PageError(file, field, 'expected an array of dates');
  const checked = ArrayDates.check(x);
  if ('bad' in checked) throw new PageError(file, field, `expected a date, found ${describe(checked.bad)}`);
  return checked;
}

/** A trace by exact name, failing with the names the page does have; two of that name are refused (decision 101). */
export function traceNamed(traces: Trace[], name: string, file: string): Trace {
  const t = traceNamedIfAny(traces, name, file);
  if (!t) throw new PageError(file, `trace "${name}"`, `absent (traces: ${traces.map((tr) => tr.name ?? '(unnamed)').join(', ')})`);
  return t;
}

/**
 * The one trace `is` picks, or undefined; `what` names it. Two are refused: which one the reading comes from would be
 * the page's order, not its meaning, so a second trace of a name is never read past without a word (decision 101).
 */
export function onlyTrace(traces: Trace[], is: (t: Trace) => boolean, what: string, file: string): Trace | undefined {
  const found = traces.filter(is);
  if (found.length > 1) throw new PageError(file, what, `${found.length} traces of that name: which one to read is ambiguous`);
  return found[0];
}

/** The trace of one of `names` (a line the page names one way or another), or undefined; two are refused. */
export function traceNamedIfAny(traces: Trace[], names: string | readonly string[], file: string): Trace | undefined {
  const list = typeof names === 'string' ? [names] : names;
  const what = list.map((n) => `"${n}"`).join(' or ');
  return onlyTrace(traces, (t) => typeof t.name === 'string' && list.includes(t.name), `trace ${what}`, file);
}

/** A dated series: its dates with y values (NaN where missing). */
export interface Series {
  x: Dates;
  values: Float64Array;
}

/** The date (`YYYY-MM-DD`) of point i. */
export const dateAt = (s: Series, i: number): string => s.x.date(i);

export function series(trace: Trace, file: string): Series {
  const x = datesOf(trace, file);
  const v = numbers(trace.y, file, `trace "${trace.name ?? '(unnamed)'}" y`);
  if (v.length !== x.length) throw new PageError(file, `trace "${trace.name ?? '(unnamed)'}"`, `${x.length} dates but ${v.length} values`);
  return { x, values: v };
}

/**
 * The last point of a series: the point a reading is read at. It must be a finite number: a NaN, an infinity or a
 * null there is refused, never replaced by the point before it, which would publish yesterday's value as today's
 * (decision 101). Gaps earlier in the series are the site's own and stay gaps.
 */
export function lastPoint(s: Series, file: string, field: string): { date: string; value: number } {
  if (s.values.length === 0) throw new PageError(file, field, 'the series holds no point');
  const i = s.values.length - 1;
  const value = s.values[i]!;
  const date = dateAt(s, i);
  if (!Number.isFinite(value)) throw new PageError(file, field, `the last point (${date}) is ${value}, not a finite number`);
  return { date, value };
}

/**
 * A series' value at `date`, the point a reading is read at: null when the series has no point that day, the value
 * when it is a finite number, refused when it is not (a NaN or an infinity there is never published as null).
 */
export function pointAt(s: Series, date: string, file: string, field: string, hint = -1): number | null {
  const i = hint >= 0 && hint < s.x.length && s.x.date(hint) === date ? hint : s.x.lastIndexOf(date);
  if (i < 0) return null;
  const value = s.values[i]!;
  if (!Number.isFinite(value)) throw new PageError(file, field, `the point at ${date} is ${value}, not a finite number`);
  return value;
}

/**
 * Value of a series at a date (NaN when the date is absent). `hint` is where the date sits in a series sharing
 * the same x (the lines of one chart usually do): checked first, so aligned lookups cost nothing.
 */
export function valueAt(s: Series, date: string, hint = -1): number {
  if (hint >= 0 && hint < s.x.length && s.x.date(hint) === date) return s.values[hint]!;
  const i = s.x.lastIndexOf(date);
  return i >= 0 ? s.values[i]! : NaN;
}

/** Name-pattern traces (`Risk Level 1..10`, `Risk Level 0.5-0.6`): the one whose x holds `date`, with its point index. */
export function bandHolding(
  traces: Trace[],
  pattern: RegExp,
  date: string,
  file: string,
): { trace: Trace; match: RegExpExecArray; index: number } | null {
  let hit: { trace: Trace; match: RegExpExecArray; index: number } | null = null;
  for (const t of traces) {
    const m = typeof t.name === 'string' ? pattern.exec(t.name) : null;
    if (!m) continue;
    const index = datesOf(t, file).lastIndexOf(date);
    if (index < 0) continue;
    // Two bands holding the day the reading is read at: which band it is in would be the page's order (decision 101).
    if (hit && hit.match[0] !== m[0])
      throw new PageError(file, `trace "${m[0]}"`, `holds ${date} as "${hit.match[0]}" does: the band there is ambiguous`);
    hit ??= { trace: t, match: m, index };
  }
  return hit;
}

/**
 * For each wanted day (days since 1970-01-01), which band trace holds it and where: one pass over every band
 * trace, for mining weekly history, with no allocation per point.
 */
export function bandIndex(
  traces: Trace[],
  pattern: RegExp,
  wanted: Iterable<number>,
  file: string,
): Map<number, { match: RegExpExecArray; trace: Trace; index: number }> {
  const out = new Map<number, { match: RegExpExecArray; trace: Trace; index: number }>();
  const want = new Set(wanted);
  for (const t of traces) {
    const m = typeof t.name === 'string' ? pattern.exec(t.name) : null;
    if (!m) continue;
    const x = datesOf(t, file);
    for (let i = 0; i < x.length; i++) {
      const day = x.day(i);
      if (want.has(day)) out.set(day, { match: m, trace: t, index: i });
    }
  }
  return out;
}

const decodedCustom = new WeakMap<object, Matrix>();
/** Row `index` of a trace's numeric customdata, decoded once per trace. */
export function customRow(trace: Trace, index: number, file: string): Float64Array {
  let m = decodedCustom.get(trace);
  if (!m) decodedCustom.set(trace, (m = decodeNumbers(trace.customdata, file, `trace "${trace.name ?? '(unnamed)'}" customdata`)));
  if (index >= m.rows) throw new PageError(file, `trace "${trace.name ?? '(unnamed)'}" customdata`, `${m.rows} rows, no row ${index}`);
  return m.data.subarray(index * m.cols, (index + 1) * m.cols);
}
