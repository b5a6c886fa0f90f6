/**
 * Browsers, where the operator allows them (decision 105): the origins a deployment names, read alike by `serve
 * --cors-origin` and the edge's `CORS_ORIGINS`. An origin is what a browser sends in its `Origin` header,
 * scheme://host[:port] without a path; `*` names every origin.
 */

/** Every origin: no cookie or other ambient credential is ever accepted, so a page must hold the key it sends. */
export const ANY_ORIGIN = '*';

/** What an allowed origin looks like, as a message says it. */
export const ORIGIN_FORM = 'an origin scheme://host[:port] with no path, such as https://dash.example.com, or *';

/**
 * `value` as a browser's `Origin` header carries it (scheme and host lower-case, no default port, a host in
 * punycode), `*` as it is, or null when it is no origin: another scheme than http(s), a path (even `/`), a query, a
 * fragment, a user or password, or no host.
 */
export function allowedOrigin(value: string): string | null {
  if (value === ANY_ORIGIN) return value;
  if (!/^https?:\/\/[^/?#@\\\s]+$/i.test(value) || !URL.canParse(value)) return null;
  const { origin } = new URL(value);
  return origin === 'null' ? null : origin;
}

/** The origins of a list as a configuration holds them (the edge's `CORS_ORIGINS`): separated by commas or spaces. */
export const originList = (list: string | undefined): string[] => (list ?? '').split(/[\s,]+/).filter(Boolean);
