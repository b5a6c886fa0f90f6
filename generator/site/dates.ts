/**
 * The x dates of a Plotly trace. A chart's dates are most of its page (4,000 points of
 * `"YYYY-MM-DDT00:00:00.000000000"` per line); a reading needs a handful of them, so dates are read where they
 * lie in the page's bytes rather than made into one string each.
 */

/** A trace's dates, point by point. */
export interface Dates {
  readonly length: number;
  /** `YYYY-MM-DD` of point i. */
  date(i: number): string;
  /** Days since 1970-01-01 of point i. */
  day(i: number): number;
  /** The last point dated `date` (`YYYY-MM-DD`), or -1. */
  lastIndexOf(date: string): number;
}

const DAY_MS = 86_400_000;

/**
 * Days since 1970-01-01 of year y, month m, day d, in integer arithmetic (the proleptic Gregorian
 * days-from-civil count): history mining asks it of every point of a page.
 */
function daysFrom(y: number, m: number, d: number): number {
  const year = y - (m <= 2 ? 1 : 0);
  const era = Math.floor(year / 400);
  const yoe = year - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  return era * 146097 + yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy - 719468;
}

/** Days since 1970-01-01 of `YYYY-MM-DD`. */
export function dayNumber(d: string): number {
  const digit = (i: number) => d.charCodeAt(i) - 48;
  return daysFrom(digit(0) * 1000 + digit(1) * 100 + digit(2) * 10 + digit(3), digit(5) * 10 + digit(6), digit(8) * 10 + digit(9));
}

/** `YYYY-MM-DD` of a day number. */
export const dayDate = (n: number): string => new Date(n * DAY_MS).toISOString().slice(0, 10);

const isDigit = (c: number | undefined) => c !== undefined && c >= 48 && c <= 57;
/** Whether the 10 bytes (or characters) from `at(0)` read `DDDD-DD-DD`. */
function isDate(at: (i: number) => number | undefined): boolean {
  for (let i = 0; i < 10; i++) if (i === 4 || i === 7 ? at(i) !== 45 : !isDigit(at(i))) return false;
  return true;
}

/** Dates given as an array of strings (a page whose x does not have the uniform shape DateColumn reads). */
export class ArrayDates implements Dates {
  constructor(private readonly x: readonly string[]) {}
  get length(): number {
    return this.x.length;
  }
  date(i: number): string {
    const d = this.x[i]!;
    return d.length === 10 ? d : d.slice(0, 10);
  }
  day(i: number): number {
    return dayNumber(this.x[i]!);
  }
  lastIndexOf(date: string): number {
    for (let i = this.x.length - 1; i >= 0; i--) if (this.x[i]!.startsWith(date)) return i;
    return -1;
  }
  /**
   * The strings as dates, or why not: the full pattern on the first and last points, the dashes of every other
   * (a cheap shape check per point; a wrong digit between them is found by whoever reads that point's date).
   */
  static check(x: unknown[]): ArrayDates | { bad: unknown } {
    for (let i = 0; i < x.length; i++) {
      const d = x[i];
      if (typeof d !== 'string' || d.charCodeAt(4) !== 45 || d.charCodeAt(7) !== 45) return { bad: d };
      if ((i === 0 || i === x.length - 1) && !isDate((k) => d.charCodeAt(k))) return { bad: d };
    }
    return new ArrayDates(x as string[]);
  }
}

const QUOTE = 0x22;
const COMMA = 0x2c;
const CLOSE = 0x5d;
const DASH = 0x2d;

/**
 * A JSON array of date strings of one length, read in place from the page's bytes: point i starts `stride`
 * bytes after point i-1, so any point is found without reading the ones before it.
 */
export class DateColumn implements Dates {
  private constructor(
    private readonly bytes: Buffer,
    /** Offset of point 0's first digit. */
    private readonly first: number,
    readonly length: number,
    private readonly stride: number,
  ) {}

  date(i: number): string {
    const p = this.first + i * this.stride;
    return this.bytes.toString('latin1', p, p + 10);
  }

  day(i: number): number {
    const b = this.bytes;
    const p = this.first + i * this.stride;
    return daysFrom(
      (b[p]! - 48) * 1000 + (b[p + 1]! - 48) * 100 + (b[p + 2]! - 48) * 10 + b[p + 3]! - 48,
      (b[p + 5]! - 48) * 10 + b[p + 6]! - 48,
      (b[p + 8]! - 48) * 10 + b[p + 9]! - 48,
    );
  }

  lastIndexOf(date: string): number {
    // Point by point from the end, comparing the day digits first: a miss costs one byte compare per point.
    const want = Buffer.from(date, 'latin1');
    if (want.length !== 10) return -1;
    for (let i = this.length - 1, p = this.first + i * this.stride; i >= 0; i--, p -= this.stride) {
      let k = 9;
      while (k >= 0 && this.bytes[p + k] === want[k]) k--;
      if (k < 0) return i;
    }
    return -1;
  }

  /**
   * The array whose `[` is at `open`, if it is one of dates of one length, with the offset just past its `]`;
   * null for anything else (the caller then leaves it to JSON.parse). Checked as ArrayDates checks: every
   * point's quotes, separator and dashes, and the full pattern on the first and last points.
   */
  static at(bytes: Buffer, open: number): { dates: DateColumn; end: number } | null {
    if (bytes[open + 1] !== QUOTE) return null;
    const firstClose = bytes.indexOf(QUOTE, open + 2);
    const stride = firstClose - open + 1;
    if (firstClose < 0 || stride < 13) return null;
    const end = bytes.indexOf(CLOSE, open);
    if (end < 0 || (end - open) % stride !== 0) return null;
    const n = (end - open) / stride;
    for (let i = 0, p = open + 1; i < n; i++, p += stride) {
      if (
        bytes[p] !== QUOTE ||
        bytes[p + 5] !== DASH ||
        bytes[p + 8] !== DASH ||
        bytes[p + stride - 2] !== QUOTE ||
        bytes[p + stride - 1] !== (i === n - 1 ? CLOSE : COMMA)
      )
        return null;
    }
    const last = open + 2 + (n - 1) * stride;
    if (!isDate((k) => bytes[open + 2 + k]) || !isDate((k) => bytes[last + k])) return null;
    return { dates: new DateColumn(bytes, open + 2, n, stride), end: end + 1 };
  }
}

/** Every date, as strings (for callers that need them all, such as tests). */
export const allDates = (d: Dates): string[] => Array.from({ length: d.length }, (_, i) => d.date(i));
