import { PageError, describe } from './errors.js';

/** What the pages print where they have no value (decision 19: these become null, never 0). */
const NOT_PRINTED = new Set(['', 'N/A', 'NA', 'n/a', '—', '–', '-', '--', 'nan', 'NaN', 'None', 'null']);
/** Whether a card prints no value: the one rule every parser applies. */
export const notPrinted = (text: string): boolean => NOT_PRINTED.has(text.replace(/\s+/g, ' ').trim());

/**
 * A printed money, percentage or plain number: `$82,907.05`, `+177.81%`, `-48.25%`, `11.4/100`, `Level 7`.
 * Strips `$`, `,`, `%`, a leading `+` and a `/100` scale; keeps the sign. Null where the page prints no value.
 */
export function parsePrinted(text: string | undefined, file: string, field: string): number | null {
  if (text === undefined) throw new PageError(file, field, 'no such card on the page');
  const t = text.replace(/\s+/g, ' ').trim();
  if (NOT_PRINTED.has(t)) return null;
  // Thousands are grouped in threes (`$82,907.05`) or not at all: `$8,2,900` is not a number the site prints.
  const m = /^([+-]?)\$?\s*(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)\s*(?:%|\/\s*100)?$/.exec(t);
  if (!m) throw new PageError(file, field, `expected a printed number, found ${describe(t)}`);
  const n = Number(m[2]!.replace(/,/g, ''));
  if (!Number.isFinite(n)) throw new PageError(file, field, `expected a finite number, found ${describe(t)}`);
  return m[1] === '-' ? -n : n;
}

/** Values taken from traces keep 8 significant digits (decision 39). */
export function sig8(x: number): number {
  return Number(x.toPrecision(8));
}

export function round2(x: number): number {
  return Math.round(x * 100 + (x >= 0 ? 1e-9 : -1e-9)) / 100;
}

/** round2 of a number the series carries, or null where it carries none (NaN, absent). */
export const round2OrNull = (x: number | undefined): number | null => (x !== undefined && Number.isFinite(x) ? round2(x) : null);
