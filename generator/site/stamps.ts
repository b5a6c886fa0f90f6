import { PageError, describe } from './errors.js';

const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];

const pad = (n: number) => String(n).padStart(2, '0');

function iso(file: string, field: string, y: number, mo: number, d: number, h: number, mi: number, raw: string): string {
  const t = Date.UTC(y, mo - 1, d, h, mi);
  const back = new Date(t);
  if (back.getUTCFullYear() !== y || back.getUTCMonth() !== mo - 1 || back.getUTCDate() !== d || h > 23 || mi > 59) {
    throw new PageError(file, field, `not a real date and time: ${describe(raw)}`);
  }
  return `${y}-${pad(mo)}-${pad(d)}T${pad(h)}:${pad(mi)}:00Z`;
}

/**
 * The printed publication stamp of a page, as ISO 8601 UTC to the minute. Accepts the site's forms:
 * `2026-10-10 23:58 UTC` (after LAST UPDATED / UPDATED / LAST UPDATE) and `October 11, 2026 - 00:09 UTC`.
 */
export function parseStamp(text: string | undefined, file: string, field: string): string {
  if (text === undefined) throw new PageError(file, field, 'no stamp on the page');
  const t = text.replace(/\s+/g, ' ').trim();
  let m = /(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}) UTC/.exec(t);
  if (m) return iso(file, field, +m[1]!, +m[2]!, +m[3]!, +m[4]!, +m[5]!, t);
  m = /([A-Za-z]+) (\d{1,2}), (\d{4}) - (\d{2}):(\d{2}) UTC/.exec(t);
  if (m) {
    const mo = MONTHS.indexOf(m[1]!.toLowerCase());
    if (mo >= 0) return iso(file, field, +m[3]!, mo + 1, +m[2]!, +m[4]!, +m[5]!, t);
  }
  throw new PageError(file, field, `expected a stamp like "2026-10-10 23:58 UTC", found ${describe(t)}`);
}

/** A plain `YYYY-MM-DD` date, checked to be a real calendar day. */
export function parseDate(text: string | undefined, file: string, field: string): string {
  const m = text === undefined ? null : /^(\d{4})-(\d{2})-(\d{2})$/.exec(text.trim());
  if (!m) throw new PageError(file, field, `expected a date YYYY-MM-DD, found ${describe(text)}`);
  return iso(file, field, +m[1]!, +m[2]!, +m[3]!, 0, 0, text!).slice(0, 10);
}
