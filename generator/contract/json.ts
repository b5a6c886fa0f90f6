/**
 * Deterministic JSON: key order as built, a final newline. Nested structure is indented two spaces; an object
 * or array holding only plain values (a history row, a price, a symbol list) stays on one line, so a diff
 * between two builds shows one line per changed row. Same object, same bytes.
 * Numbers are finite by construction: every reading is zod-checked finite when parsed (decision 19).
 */
export function toJson(value: unknown): string {
  return written(value, undefined)
    .map((p) => (typeof p === 'string' ? p : decoder.decode(p)))
    .join('');
}

/**
 * An array whose elements come already written (a ledger's carried rows, as their published file spelled them):
 * given the indentation of its elements, it gives their text, separated as this writer separates them, as strings
 * and bytes. No element of such an array contains a line break.
 */
export const PREWRITTEN = Symbol('prewritten array');
export interface Prewritten {
  [PREWRITTEN](indent: string): (string | Uint8Array)[];
}
const isPrewritten = (v: unknown): v is Prewritten => typeof (v as Prewritten)[PREWRITTEN] === 'function';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * The bytes of toJson for many documents that share objects (a ledger and its precomputed pages hold the same row
 * objects): a one-line object met again is written from memory, a long run of one-line objects met again in the
 * same order from its start (a ledger's first pages) is copied from the bytes it was first written to, and a
 * Prewritten array's bytes are copied, never decoded. The documents must not change while it is in use.
 */
export function jsonWriter(): (value: unknown) => Uint8Array {
  const memo: Memo = { texts: new WeakMap(), runs: new WeakMap() };
  return (value) => {
    const parts = written(value, memo);
    if (parts.length === 1) return encoder.encode(parts[0] as string);
    const chunks = parts.map((p) => (typeof p === 'string' ? encoder.encode(p) : p));
    const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
    let at = 0;
    for (const c of chunks) {
      out.set(c, at);
      at += c.byteLength;
    }
    return out;
  };
}

/** A long run of one-line elements as written once: the elements, their bytes, where each one's line ends. */
interface Run {
  elements: readonly unknown[];
  bytes: Uint8Array;
  ends: Int32Array;
  indent: string;
}
interface Memo {
  /** One-line objects' texts. */
  texts: WeakMap<object, string>;
  /** Runs written before, by their first element. */
  runs: WeakMap<object, Run>;
}

/**
 * The document's text, as strings and the bytes of its Prewritten arrays. Each run of bytes stands in the text as
 * a marker that JSON text cannot hold (a raw NUL: JSON.stringify escapes every control character).
 */
function written(value: unknown, memo: Memo | undefined): (string | Uint8Array)[] {
  const bytes: Uint8Array[] = [];
  const text = write(value, '', memo, bytes) + '\n';
  if (bytes.length === 0) return [text];
  const parts: (string | Uint8Array)[] = [];
  let at = 0;
  bytes.forEach((b, k) => {
    const mark = marker(k);
    const i = text.indexOf(mark, at);
    parts.push(text.slice(at, i), b);
    at = i + mark.length;
  });
  parts.push(text.slice(at));
  return parts;
}
const marker = (k: number) => `\u0000${k}\u0000`;

const isPlain = (v: unknown) => v === null || typeof v !== 'object';
const isOneLine = (v: unknown): v is object => {
  if (isPlain(v) || Array.isArray(v) || isPrewritten(v)) return false;
  for (const k in v as Record<string, unknown>) if (!isPlain((v as Record<string, unknown>)[k])) return false;
  return true;
};

/**
 * From how many elements an array of one-line objects is written as a run of bytes: a ledger's rows and its pages'
 * are hundreds to thousands, a document's other arrays a handful.
 */
const LONG_RUN = 64;

/**
 * The elements of an array of one-line objects as the bytes of their lines (the separators between them included),
 * or null for any other array. Written once and encoded once: as text, the rows of a ledger would be copied again
 * by every enclosing join and by the final encoding, and their text would live as long as the rows. The first
 * elements of a run written before, in its order and indentation, are copied from its bytes (a ledger's first pages).
 */
function longRun(v: readonly unknown[], inner: string, memo: Memo | undefined): Uint8Array | null {
  if (!v.every(isOneLine)) return null;
  const before = memo?.runs.get(v[0]!);
  if (before && before.indent === inner && v.length <= before.elements.length && v.every((x, k) => x === before.elements[k]))
    return before.bytes.subarray(0, before.ends[v.length - 1]);
  const texts = v.map((x) => memo?.texts.get(x) ?? JSON.stringify(x));
  const separator = `,\n${inner}`;
  const bytes = encoder.encode(texts.join(separator));
  const ends = new Int32Array(texts.length);
  // Offsets count bytes: a run of ASCII text has as many as characters, any other run is measured line by line.
  const ascii = bytes.byteLength === texts.reduce((n, t) => n + t.length, 0) + separator.length * (texts.length - 1);
  const width = ascii ? (t: string) => t.length : (t: string) => encoder.encode(t).byteLength;
  const gap = ascii ? separator.length : encoder.encode(separator).byteLength;
  let at = -gap;
  texts.forEach((t, i) => (ends[i] = at += gap + width(t)));
  memo?.runs.set(v[0]!, { elements: v, bytes, ends, indent: inner });
  return bytes;
}

function write(v: unknown, indent: string, memo: Memo | undefined, bytes: Uint8Array[]): string {
  if (isPlain(v)) return JSON.stringify(v);
  const inner = indent + '  ';
  if (isPrewritten(v)) {
    const body = v[PREWRITTEN](inner)
      .map((p) => (typeof p === 'string' ? p : marker(bytes.push(p) - 1)))
      .join('');
    return body ? `[\n${inner}${body}\n${indent}]` : '[]';
  }
  if (Array.isArray(v)) {
    let plain = true;
    for (const x of v) if (!isPlain(x)) { plain = false; break; } // prettier-ignore
    if (plain) return JSON.stringify(v);
    if (v.length === 0) return '[]';
    const run = v.length >= LONG_RUN ? longRun(v, inner, memo) : null;
    if (run) return `[\n${inner}${marker(bytes.push(run) - 1)}\n${indent}]`;
    return `[\n${v.map((x) => inner + write(x, inner, memo, bytes)).join(',\n')}\n${indent}]`;
  }
  const o = v as Record<string, unknown>;
  const known = memo?.texts.get(o);
  if (known !== undefined) return known;
  let plain = true;
  for (const k in o) if (!isPlain(o[k])) { plain = false; break; } // prettier-ignore
  if (plain) {
    const text = JSON.stringify(o);
    memo?.texts.set(o, text);
    return text;
  }
  const parts: string[] = [];
  for (const k in o) if (o[k] !== undefined) parts.push(`${inner}${JSON.stringify(k)}: ${write(o[k], inner, memo, bytes)}`);
  return parts.length ? `{\n${parts.join(',\n')}\n${indent}}` : '{}';
}
