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
 * objects): a one-line object met again is written from memory, and a Prewritten array's bytes are copied, never
 * decoded. The documents must not change while it is in use.
 */
export function jsonWriter(): (value: unknown) => Uint8Array {
  const own = new WeakMap<object, string>();
  const memo: Memo = { get: (o) => own.get(o), set: (o, text) => own.set(o, text) };
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

type Memo = { get(o: object): string | undefined; set(o: object, text: string): void };

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
    return v.length ? `[\n${v.map((x) => inner + write(x, inner, memo, bytes)).join(',\n')}\n${indent}]` : '[]';
  }
  const o = v as Record<string, unknown>;
  const known = memo?.get(o);
  if (known !== undefined) return known;
  let plain = true;
  for (const k in o) if (!isPlain(o[k])) { plain = false; break; } // prettier-ignore
  if (plain) {
    const text = JSON.stringify(o);
    memo?.set(o, text);
    return text;
  }
  const parts: string[] = [];
  for (const k in o) if (o[k] !== undefined) parts.push(`${inner}${JSON.stringify(k)}: ${write(o[k], inner, memo, bytes)}`);
  return parts.length ? `{\n${parts.join(',\n')}\n${indent}}` : '{}';
}
