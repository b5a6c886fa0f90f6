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

/** Whether every member of an object or array is a plain value: then it is written on one line. */
function flat(v: object): boolean {
  if (Array.isArray(v)) return v.every(isPlain);
  for (const k in v) if (!isPlain((v as Record<string, unknown>)[k])) return false;
  return true;
}

function write(v: unknown, indent: string): string {
  if (isPlain(v) || flat(v as object)) return JSON.stringify(v);
  const inner = indent + '  ';
  let s = '';
  if (Array.isArray(v)) {
    for (const x of v) s += `${s ? ',\n' : ''}${inner}${write(x, inner)}`;
    return `[\n${s}\n${indent}]`;
  }
  const o = v as Record<string, unknown>;
  for (const k in o) if (o[k] !== undefined) s += `${s ? ',\n' : ''}${inner}${JSON.stringify(k)}: ${write(o[k], inner)}`;
  return `{\n${s}\n${indent}}`;
}
