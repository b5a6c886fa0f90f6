/**
 * A ledger's rows as a build continues it. A day-2 build carries about a thousand published rows per asset and adds
 * one: parsed, checked and serialised again, the carried rows were most of its work. Here they stay the bytes their
 * published file gave them, parsed only where a row is read, and the new ledger and its first pages hold them byte
 * for byte. Runtime-neutral (no Buffer): the JSON writer, the validator and the examples read it.
 */
import { PREWRITTEN, type Prewritten } from './json.js';
import type { HistoryLedger, HistoryRow } from './shapes.js';

const NEWLINE = 0x0a;
const utf8 = new TextDecoder();
const ascii = (bytes: Uint8Array, from: number, to: number) => String.fromCharCode(...bytes.subarray(from, to));

/** What opens the rows array in a ledger this writer wrote, and how each row opens: `{"date":"YYYY-MM-DD","basis":"`. */
const ROWS_KEY = '"rows": [\n';
const DATE_AT = '{"date":"'.length;
const BASIS_AT = '{"date":"YYYY-MM-DD","basis":"'.length;
const BASIS_KEY = '","basis":"';

/**
 * The rows of a published ledger. Read from its file's bytes (`read`), each row is the line the writer gave it;
 * a file laid out or spelled by another writer is parsed whole instead (`parsed`), and its rows are written anew.
 */
export class PublishedRows {
  /** Rows parsed so far, by index: the same object every time, so a row is checked once however many files hold it. */
  private readonly parsedRows: HistoryRow[];

  private constructor(
    /** The file's bytes, when the rows are its lines; null when they were parsed whole. */
    private readonly bytes: Uint8Array | null,
    /** Where each row's text starts and ends in `bytes` (its closing brace included, its comma not). */
    private readonly starts: Int32Array,
    private readonly ends: Int32Array,
    /** The indentation of a row's line in the file. */
    private readonly indent: string,
    parsed: HistoryRow[],
  ) {
    this.parsedRows = parsed;
  }

  /** Rows given as objects: they are checked and written as new rows are. */
  static parsed(rows: readonly HistoryRow[]): PublishedRows {
    return new PublishedRows(null, new Int32Array(0), new Int32Array(0), '', [...rows]);
  }

  /**
   * The rows of a ledger file as this writer lays one out (toJson: the rows last in `data`, one per line, each
   * opening with its date and basis), or null for any other layout, a row count that disagrees with
   * `total_row_count`, or a first or last row not spelled as JSON.stringify spells it now (an older writer).
   */
  static read(bytes: Uint8Array): PublishedRows | null {
    const text = (from: number, to: number) => utf8.decode(bytes.subarray(from, to));
    const key = indexOf(bytes, ROWS_KEY);
    if (key < 0) return null;
    const lineStart = bytes.lastIndexOf(NEWLINE, key) + 1;
    const outer = text(lineStart, key);
    if (!/^ *$/.test(outer)) return null;
    let header: HistoryLedger;
    try {
      header = JSON.parse(text(0, key + ROWS_KEY.length - 1) + ']}}') as HistoryLedger;
    } catch {
      return null;
    }
    const count = header?.data?.total_row_count;
    if (!Number.isInteger(count) || count < 1) return null;
    const indent = outer + '  ';
    const starts = new Int32Array(count);
    const ends = new Int32Array(count);
    let at = key + ROWS_KEY.length;
    for (let i = 0; i < count; i++) {
      const end = bytes.indexOf(NEWLINE, at);
      const last = i === count - 1;
      const close = last ? end : end - 1;
      if (end < 0 || !startsWith(bytes, at, indent) || bytes[close - 1] !== 0x7d /* } */ || (!last && bytes[close] !== 0x2c) /* , */)
        return null;
      const start = at + indent.length;
      if (!startsWith(bytes, start, '{"date":"') || !startsWith(bytes, start + DATE_AT + 10, BASIS_KEY)) return null;
      starts[i] = start;
      ends[i] = close;
      at = end + 1;
    }
    if (text(at, bytes.byteLength) !== `${outer}]\n  }\n}\n`) return null;
    const rows = new PublishedRows(bytes, starts, ends, indent, new Array<HistoryRow>(count));
    const spelledNow = (i: number) => JSON.stringify(rows.row(i)) === text(starts[i]!, ends[i]!);
    return spelledNow(0) && spelledNow(count - 1) ? rows : null;
  }

  get length(): number {
    return this.bytes ? this.starts.length : this.parsedRows.length;
  }

  /** Whether the rows are the lines of a file this writer wrote (else they were parsed whole). */
  get asWritten(): boolean {
    return this.bytes !== null;
  }

  date(i: number): string {
    return this.bytes ? ascii(this.bytes, this.starts[i]! + DATE_AT, this.starts[i]! + DATE_AT + 10) : this.parsedRows[i]!.date;
  }

  basis(i: number): HistoryRow['basis'] {
    if (!this.bytes) return this.parsedRows[i]!.basis;
    return this.bytes[this.starts[i]! + BASIS_AT] === 0x61 /* a */ ? 'as_published' : 'weekly_archive';
  }

  /** Row i, parsed once. */
  row(i: number): HistoryRow {
    return (this.parsedRows[i] ??= JSON.parse(utf8.decode(this.bytes!.subarray(this.starts[i]!, this.ends[i]!))) as HistoryRow);
  }

  /**
   * Rows [0, n) as the writer lays out an array's elements at `indent`: the file's own bytes where it indented its
   * rows alike (the separators between them included), else each row serialised.
   */
  lines(n: number, indent: string): (string | Uint8Array)[] {
    if (n === 0) return [];
    if (this.bytes && indent === this.indent) return [this.bytes.subarray(this.starts[0]!, this.ends[n - 1]!)];
    const out: string[] = [];
    for (let i = 0; i < n; i++) out.push(JSON.stringify(this.row(i)));
    return [out.join(`,\n${indent}`)];
  }
}

/**
 * A continued ledger's rows: rows [0, head) of the published ones, then the rows this build adds. The JSON writer
 * writes it as the array of those rows.
 */
export class LedgerRows implements Prewritten {
  constructor(
    readonly carried: PublishedRows,
    readonly head: number,
    readonly added: readonly HistoryRow[],
  ) {}

  get length(): number {
    return this.head + this.added.length;
  }

  date(i: number): string {
    return i < this.head ? this.carried.date(i) : this.added[i - this.head]!.date;
  }

  basis(i: number): HistoryRow['basis'] {
    return i < this.head ? this.carried.basis(i) : this.added[i - this.head]!.basis;
  }

  /** The first `n` rows. */
  first(n: number): LedgerRows {
    return n >= this.length ? this : new LedgerRows(this.carried, Math.min(n, this.head), this.added.slice(0, Math.max(0, n - this.head)));
  }

  /** Every row, parsed. */
  all(): HistoryRow[] {
    const out: HistoryRow[] = [];
    for (let i = 0; i < this.head; i++) out.push(this.carried.row(i));
    return [...out, ...this.added];
  }

  [PREWRITTEN](indent: string): (string | Uint8Array)[] {
    const parts = this.carried.lines(this.head, indent);
    const added = this.added.map((r) => JSON.stringify(r)).join(`,\n${indent}`);
    if (added) parts.push(parts.length ? `,\n${indent}${added}` : added);
    return parts;
  }
}

/** A ledger's rows as the build plans them: a new ledger's as objects, a continued one's as LedgerRows. */
export type Rows = readonly HistoryRow[] | LedgerRows;

/** A ledger as the build plans it: a HistoryLedger whose rows may be carried as published. */
export type PlannedLedger = Omit<HistoryLedger, 'data'> & { data: Omit<HistoryLedger['data'], 'rows'> & { rows: Rows } };

export const dateAt = (rows: Rows, i: number): string => (rows instanceof LedgerRows ? rows.date(i) : rows[i]!.date);
export const basisAt = (rows: Rows, i: number): HistoryRow['basis'] => (rows instanceof LedgerRows ? rows.basis(i) : rows[i]!.basis);
export const firstRows = (rows: Rows, n: number): Rows => (rows instanceof LedgerRows ? rows.first(n) : rows.slice(0, n));
/** The rows as objects (parsing the carried ones): for the few readers that need every row, not the build's path. */
export const plainRows = (rows: Rows): readonly HistoryRow[] => (rows instanceof LedgerRows ? rows.all() : rows);

function startsWith(bytes: Uint8Array, at: number, s: string): boolean {
  for (let k = 0; k < s.length; k++) if (bytes[at + k] !== s.charCodeAt(k)) return false;
  return true;
}

/** The first offset of the ASCII string `s` in `bytes`, or -1. */
function indexOf(bytes: Uint8Array, s: string): number {
  const first = s.charCodeAt(0);
  for (let at = bytes.indexOf(first); at >= 0; at = bytes.indexOf(first, at + 1)) if (startsWith(bytes, at, s)) return at;
  return -1;
}
