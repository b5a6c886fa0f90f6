import { PageError, describe } from './errors.js';

/** One Plotly trace as the page serialises it (keys sorted; `name` may be missing). */
export type Trace = Record<string, unknown> & { name?: string; x?: unknown; y?: unknown; customdata?: unknown };

export interface PlotlyFigure {
  traces: Trace[];
  /** Character range of the traces array in the page, so callers can drop it before reading the HTML. */
  start: number;
  end: number;
}

const NEW_PLOT = 'Plotly.newPlot(';

/**
 * The traces array starting at `start`. Plotly writes it followed by `, {layout}`: the first `]` so followed
 * whose prefix parses is the array's end (a shorter prefix cannot balance). A page that defeats this fast
 * path falls back to a full scan that tracks strings.
 */
function parseTraces(html: string, start: number, file: string): { traces: unknown; end: number } {
  let at = start;
  for (let tries = 0; tries < 3; ) {
    const close = html.indexOf('],', at);
    if (close < 0) break;
    at = close + 2;
    let k = at;
    while (isSpace(html.charCodeAt(k))) k++;
    if (html.charCodeAt(k) !== 123 /* { */) continue;
    tries++;
    try {
      return { traces: JSON.parse(html.slice(start, close + 1)), end: close + 1 };
    } catch {
      // not the end: try the next candidate, then the scan
    }
  }
  const end = matchingEnd(html, start);
  if (end < 0) throw new PageError(file, 'Plotly.newPlot', 'the traces array never closes');
  try {
    return { traces: JSON.parse(html.slice(start, end)), end };
  } catch (e) {
    throw new PageError(file, 'Plotly.newPlot', `the traces array is not JSON (${(e as Error).message})`);
  }
}

const isSpace = (c: number) => c === 32 || c === 10 || c === 13 || c === 9;

/** End index (exclusive) of the JSON array or object starting at `start`, honouring strings. */
function matchingEnd(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 /* [ */ || c === 123 /* { */) depth++;
    else if (c === 93 /* ] */ || c === 125 /* } */) {
      if (--depth === 0) return i + 1;
    }
  }
  return -1;
}

/**
 * Every `Plotly.newPlot("<id>", [traces], ...)` call of a page, its traces parsed with one JSON.parse each.
 * Scans for the call rather than building a DOM: the traces are most of a 1 MB page.
 */
export function readFigures(html: string, file: string): PlotlyFigure[] {
  const figures: PlotlyFigure[] = [];
  let at = html.indexOf(NEW_PLOT);
  while (at >= 0) {
    let i = at + NEW_PLOT.length;
    while (/\s/.test(html[i] ?? '')) i++;
    const quote = html[i];
    if (quote !== '"' && quote !== "'") throw new PageError(file, 'Plotly.newPlot', `expected the div id, found ${describe(html.slice(i, i + 20))}`);
    i = html.indexOf(quote, i + 1) + 1;
    while (/[\s,]/.test(html[i] ?? '')) i++;
    if (html[i] !== '[') throw new PageError(file, 'Plotly.newPlot', `expected the traces array, found ${describe(html.slice(i, i + 20))}`);
    const { traces, end } = parseTraces(html, i, file);
    if (!Array.isArray(traces)) throw new PageError(file, 'Plotly.newPlot', 'traces are not an array');
    figures.push({ traces: traces as Trace[], start: i, end });
    at = html.indexOf(NEW_PLOT, end);
  }
  return figures;
}

/** The page's one figure: a page of a one-chart kind with no chart, or with two, is not the page it claims to be. */
export function readFigure(html: string, file: string): PlotlyFigure {
  const figures = readFigures(html, file);
  if (figures.length !== 1) throw new PageError(file, 'Plotly.newPlot', `expected one Plotly chart, found ${figures.length}`);
  return figures[0]!;
}

const DTYPES = {
  f8: Float64Array, f4: Float32Array,
  i1: Int8Array, i2: Int16Array, i4: Int32Array,
  u1: Uint8Array, u2: Uint16Array, u4: Uint32Array,
} as const;

export interface Matrix {
  rows: number;
  cols: number;
  /** Row-major values; NaN marks a missing point. */
  data: Float64Array;
}

/** Decode a Plotly typed array (`{dtype, bdata, shape?}`) or a plain JSON array into float64 values. */
export function decodeNumbers(value: unknown, file: string, field: string): Matrix {
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
    if (typeof bdata !== 'string') throw new PageError(file, field, 'typed array without bdata');
    const bytes = Buffer.from(bdata, 'base64');
    if (bytes.byteLength % Ctor.BYTES_PER_ELEMENT !== 0) throw new PageError(file, field, `bdata length ${bytes.byteLength} is not a whole number of ${dtype}`);
    // Copy into a fresh, aligned buffer: a Buffer from the pool may sit at an odd offset.
    const aligned = new Uint8Array(bytes.byteLength);
    aligned.set(bytes);
    const typed = new Ctor(aligned.buffer);
    const data = typed instanceof Float64Array ? typed : typed instanceof Float32Array ? Float64Array.from(typed, shortestFloat32) : Float64Array.from(typed as ArrayLike<number>);
    let rows = data.length;
    let cols = 1;
    if (shape !== undefined) {
      const dims = String(shape).split(',').map((s) => Number(s.trim()));
      if (dims.length === 2 && dims.every(Number.isInteger)) [rows, cols] = dims as [number, number];
      else if (!(dims.length === 1 && dims[0] === data.length)) throw new PageError(file, field, `unreadable shape ${describe(shape)}`);
      if (rows * cols !== data.length) throw new PageError(file, field, `shape ${describe(shape)} does not match ${data.length} values`);
    }
    return { rows, cols, data };
  }
  throw new PageError(file, field, `expected a number array, found ${describe(typeof value === 'object' ? JSON.stringify(value) : value)}`);
}

/**
 * A float32 as the shortest decimal that reads back as the same float32 (site-format 8.1): the page's `82.08`
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
export function numbers(value: unknown, file: string, field: string): Float64Array {
  const m = decodeNumbers(value, file, field);
  if (m.cols !== 1) throw new PageError(file, field, `expected a 1-D series, found shape ${m.rows}, ${m.cols}`);
  return m.data;
}

/** The x dates of a trace (`YYYY-MM-DDT00:00:00.000000000` → `YYYY-MM-DD`). */
export function dates(trace: Trace, file: string): string[] {
  const x = trace.x;
  const field = `trace "${trace.name ?? '(unnamed)'}" x`;
  if (!Array.isArray(x)) throw new PageError(file, field, 'expected an array of dates');
  const out = new Array<string>(x.length);
  for (let i = 0; i < x.length; i++) {
    const d = x[i];
    // A cheap shape check per point (YYYY-MM-DD...), the full pattern on the first one.
    if (typeof d !== 'string' || d.charCodeAt(4) !== 45 || d.charCodeAt(7) !== 45 || (i === 0 && !/^\d{4}-\d{2}-\d{2}/.test(d))) throw new PageError(file, field, `expected a date, found ${describe(d)}`);
    out[i] = d.length === 10 ? d : d.slice(0, 10);
  }
  return out;
}

/** A trace by exact name, failing with the names the page does have. */
export function traceNamed(traces: Trace[], name: string, file: string): Trace {
  const t = traces.find((tr) => tr.name === name);
  if (!t) throw new PageError(file, `trace "${name}"`, `absent (traces: ${traces.map((tr) => tr.name ?? '(unnamed)').join(', ')})`);
  return t;
}

/**
 * A dated series: the raw x strings (`YYYY-MM-DD...`) with y values (NaN where missing). Dates are cut from x
 * only where a reading needs one: slicing every point of every trace is most of what parsing would allocate.
 */
export interface Series {
  x: string[];
  values: Float64Array;
}

/** The date (`YYYY-MM-DD`) of point i. */
export const dateAt = (s: Series, i: number): string => s.x[i]!.slice(0, 10);

/** x as strings that start with a date; the full pattern is checked on the first and last points. */
function rawDates(trace: Trace, file: string): string[] {
  const x = trace.x;
  const field = `trace "${trace.name ?? '(unnamed)'}" x`;
  if (!Array.isArray(x)) throw new PageError(file, field, 'expected an array of dates');
  for (const i of [0, x.length - 1]) {
    if (x.length && (typeof x[i] !== 'string' || !/^\d{4}-\d{2}-\d{2}/.test(x[i] as string))) throw new PageError(file, field, `expected a date, found ${describe(x[i])}`);
  }
  for (const d of x) if (typeof d !== 'string' || d.charCodeAt(4) !== 45 || d.charCodeAt(7) !== 45) throw new PageError(file, field, `expected a date, found ${describe(d)}`);
  return x as string[];
}

export function series(trace: Trace, file: string): Series {
  const x = rawDates(trace, file);
  const v = numbers(trace.y, file, `trace "${trace.name ?? '(unnamed)'}" y`);
  if (v.length !== x.length) throw new PageError(file, `trace "${trace.name ?? '(unnamed)'}"`, `${x.length} dates but ${v.length} values`);
  return { x, values: v };
}

/** Last point of a series whose value is a number (the data's end, ignoring trailing gaps). */
export function lastPoint(s: Series, file: string, field: string): { date: string; value: number } {
  for (let i = s.values.length - 1; i >= 0; i--) {
    const v = s.values[i]!;
    if (Number.isFinite(v)) return { date: dateAt(s, i), value: v };
  }
  throw new PageError(file, field, 'the series holds no number');
}

/**
 * Value of a series at a date (NaN when the date is absent). `hint` is where the date sits in a series sharing
 * the same x (the lines of one chart usually do): checked first, so aligned lookups cost nothing.
 */
export function valueAt(s: Series, date: string, hint = -1): number {
  if (s.x[hint]?.startsWith(date)) return s.values[hint]!;
  for (let i = s.x.length - 1; i >= 0; i--) if (s.x[i]!.startsWith(date)) return s.values[i]!;
  return NaN;
}

/** Name-pattern traces (`Risk Level 1..10`, `Risk Level 0.5-0.6`): the one whose x holds `date`, with its point index. */
export function bandHolding(traces: Trace[], pattern: RegExp, date: string, file: string): { trace: Trace; match: RegExpExecArray; index: number } | null {
  for (const t of traces) {
    const m = typeof t.name === 'string' ? pattern.exec(t.name) : null;
    if (!m) continue;
    const x = rawDates(t, file);
    for (let idx = x.length - 1; idx >= 0; idx--) if (x[idx]!.startsWith(date)) return { trace: t, match: m, index: idx };
  }
  return null;
}

/**
 * For each wanted point (by its raw x string, as the chart's other traces write it), which band trace holds it
 * and where: one pass over every band trace, for mining weekly history, with no allocation per point.
 */
export function bandIndex(traces: Trace[], pattern: RegExp, wanted: Iterable<string>, file: string): Map<string, { match: RegExpExecArray; trace: Trace; index: number }> {
  const out = new Map<string, { match: RegExpExecArray; trace: Trace; index: number }>();
  const want = new Set(wanted);
  for (const t of traces) {
    const m = typeof t.name === 'string' ? pattern.exec(t.name) : null;
    if (!m) continue;
    const x = rawDates(t, file);
    for (let i = 0; i < x.length; i++) if (want.has(x[i]!)) out.set(x[i]!, { match: m, trace: t, index: i });
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

/** Every date of a series (for callers that need them all, such as tests). */
export const allDates = (s: Series): string[] => s.x.map((d) => d.slice(0, 10));
