/** Deterministic JSON: key order as built, two-space indent, a final newline. Same object, same bytes. */
export function toJson(value: unknown): string {
  return JSON.stringify(value, (_k, v) => {
    if (typeof v === 'number' && !Number.isFinite(v)) throw new Error(`refusing to write a non-finite number (${v})`);
    return v;
  }, 2) + '\n';
}
