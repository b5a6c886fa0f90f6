/**
 * Deterministic JSON: key order as built, a final newline. Nested structure is indented two spaces; an object
 * or array holding only plain values (a history row, a price, a symbol list) stays on one line, so a diff
 * between two builds shows one line per changed row. Same object, same bytes.
 * Numbers are finite by construction: every reading is zod-checked finite when parsed (decision 19).
 */
export function toJson(value: unknown): string {
  return write(value, '', undefined) + '\n';
}

/**
 * toJson for many documents that share objects (a ledger and its precomputed pages hold the same row objects):
 * a one-line object met again is written from memory. The documents must not change while it is in use.
 */
export function jsonWriter(written?: ReadonlyMemo): (value: unknown) => string {
  const own = new WeakMap<object, string>();
  const memo: Memo = { get: (o) => own.get(o) ?? written?.get(o), set: (o, text) => own.set(o, text) };
  return (value) => write(value, '', memo) + '\n';
}

/** One-line objects' texts by object: those this writer wrote, and those it was given (writtenLines). */
type ReadonlyMemo = Pick<WeakMap<object, string>, 'get'>;
type Memo = ReadonlyMemo & { set(o: object, text: string): void };

/**
 * The text this writer gave each of `items`, the one-line objects of the array at `"key": [` in `text` (a
 * document it wrote and that was parsed into `items`), so that jsonWriter writes them again without serialising:
 * a build carries thousands of history rows from the previous ledger. Empty when the text is not laid out as
 * this writer lays it out, or its first or last element is not spelled as JSON.stringify spells it now (a file
 * from an older writer): the objects are then serialised anew, never written in another spelling.
 */
export function writtenLines(text: string, key: string, items: readonly object[]): [object, string][] {
  const opening = text.indexOf(`${JSON.stringify(key)}: [\n`);
  if (opening < 0 || items.length === 0) return [];
  const indent = text.slice(text.lastIndexOf('\n', opening) + 1, opening);
  const inner = indent + '  ';
  const lines: [object, string][] = [];
  let at = text.indexOf('\n', opening) + 1;
  for (let i = 0; i < items.length; i++) {
    const end = text.indexOf('\n', at);
    const last = i === items.length - 1;
    if (end < 0 || !text.startsWith(inner, at) || (text[end - 1] === ',') === last) return [];
    lines.push([items[i]!, text.slice(at + inner.length, last ? end : end - 1)]);
    at = end + 1;
  }
  if (!text.startsWith(`${indent}]`, at)) return [];
  const spelledNow = ([item, line]: [object, string]) => JSON.stringify(item) === line;
  return spelledNow(lines[0]!) && spelledNow(lines.at(-1)!) ? lines : [];
}

const isPlain = (v: unknown) => v === null || typeof v !== 'object';

function write(v: unknown, indent: string, memo: Memo | undefined): string {
  if (isPlain(v)) return JSON.stringify(v);
  const inner = indent + '  ';
  if (Array.isArray(v)) {
    let plain = true;
    for (const x of v) if (!isPlain(x)) { plain = false; break; } // prettier-ignore
    if (plain) return JSON.stringify(v);
    return v.length ? `[\n${v.map((x) => inner + write(x, inner, memo)).join(',\n')}\n${indent}]` : '[]';
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
  for (const k in o) if (o[k] !== undefined) parts.push(`${inner}${JSON.stringify(k)}: ${write(o[k], inner, memo)}`);
  return parts.length ? `{\n${parts.join(',\n')}\n${indent}}` : '{}';
}
