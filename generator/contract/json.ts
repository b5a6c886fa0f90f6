/**
 * Deterministic JSON: key order as built, a final newline. Nested structure is indented two spaces; an object
 * or array holding only plain values (a history row, a price, a symbol list) stays on one line, so a diff
 * between two builds shows one line per changed row. Same object, same bytes.
 * Numbers are finite by construction: every reading is zod-checked finite when parsed (decision 19).
 */
export function toJson(value: unknown): string {
  return write(value, '') + '\n';
}

const isPlain = (v: unknown) => v === null || typeof v !== 'object';

function write(v: unknown, indent: string): string {
  if (isPlain(v)) return JSON.stringify(v);
  const inner = indent + '  ';
  if (Array.isArray(v)) {
    let plain = true;
    for (const x of v) if (!isPlain(x)) { plain = false; break; } // prettier-ignore
    if (plain) return JSON.stringify(v);
    return v.length ? `[\n${v.map((x) => inner + write(x, inner)).join(',\n')}\n${indent}]` : '[]';
  }
  const o = v as Record<string, unknown>;
  let plain = true;
  for (const k in o) if (!isPlain(o[k])) { plain = false; break; } // prettier-ignore
  if (plain) return JSON.stringify(o);
  const parts: string[] = [];
  for (const k in o) if (o[k] !== undefined) parts.push(`${inner}${JSON.stringify(k)}: ${write(o[k], inner)}`);
  return parts.length ? `{\n${parts.join(',\n')}\n${indent}}` : '{}';
}
