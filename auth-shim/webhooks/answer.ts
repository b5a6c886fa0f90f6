/**
 * What a sender reads of a receiver's answer, the same on Node and at the edge: its Retry-After (decision 108 honours
 * it, up to 24 hours), and text from it (a redirect's Location) made safe to log. Runtime-neutral.
 */
/** Text from the receiver (a Location), cut short and stripped of control characters before it reaches a log. */
export const clip = (text: string, max = 200): string => {
  // eslint-disable-next-line no-control-regex
  const clean = text.replace(/[\x00-\x1f\x7f]/g, '');
  return clean.length > max ? `${clean.slice(0, max)}…` : clean;
};

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** An HTTP-date in any of its three forms (RFC 9110 §5.6.7), as epoch milliseconds; null when it is not one. */
function httpDate(text: string): number | null {
  const m =
    /^[A-Z][a-z]{2}, (\d{2}) ([A-Z][a-z]{2}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) GMT$/.exec(text) ?? // IMF-fixdate
    /^[A-Z][a-z]+, (\d{2})-([A-Z][a-z]{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) GMT$/.exec(text) ?? // RFC 850
    /^[A-Z][a-z]{2} ([A-Z][a-z]{2}) ( \d|\d{2}) (\d{2}):(\d{2}):(\d{2}) (\d{4})$/.exec(text); // asctime
  if (m === null) return null;
  const [day, month, year, h, min, s] = m[0].includes(',') ? m.slice(1) : [m[2], m[1], m[6], m[3], m[4], m[5]];
  const mon = MONTHS.indexOf(month!);
  let y = Number(year);
  // RFC 850's two-digit year: one that looks more than 50 years ahead is in the past century (RFC 9110).
  if (year!.length === 2) y += y + 2000 > new Date().getUTCFullYear() + 50 ? 1900 : 2000;
  const t = Date.UTC(y, mon, Number(day), Number(h), Number(min), Number(s));
  return mon < 0 || Number.isNaN(t) || new Date(t).getUTCDate() !== Number(day) ? null : t;
}

/** A Retry-After header's delay in milliseconds (delay-seconds or an HTTP-date), never negative; null if neither. */
export function retryAfterMs(value: string | null, now = Date.now()): number | null {
  if (value === null) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) {
    const ms = Number(v) * 1000;
    return Number.isSafeInteger(ms) ? ms : null;
  }
  const t = httpDate(v);
  return t === null ? null : Math.max(0, t - now);
}
