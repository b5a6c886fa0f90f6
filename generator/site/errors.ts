/** A page that exists but cannot be read: names the file, the field and what was found (decision 45). */
export class PageError extends Error {
  constructor(
    readonly file: string,
    readonly field: string,
    readonly found: string,
  ) {
    super(`${file}: ${field}: ${found}`);
    this.name = 'PageError';
  }
}

export function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  const s = typeof value === 'string' ? JSON.stringify(value) : String(value);
  return s.length > 80 ? s.slice(0, 77) + '...' : s;
}
