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
export function jsonWriter(): (value: unknown) => string {
  const memo = new WeakMap<object, string>();
  return (value) => write(value, '', memo) + '\n';
}

const isPlain = (v: unknown) => v === null || typeof v !== 'object';

function write(v: unknown, indent: string, memo: WeakMap<object, string> | undefined): string {
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
