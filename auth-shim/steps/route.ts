/**
 * Step: route. Maps a GET or HEAD request onto the API's ten routes; anything else is refused (405 with Allow, 404,
 * or 400 for an overlong query). Segments are decoded once and never reach a file path.
 */
import { Refusal } from '../refusal.js';

/** What a request names. */
export type Route =
  | { name: 'health' }
  | { name: 'openapi' }
  | { name: 'assets' }
  | { name: 'risk'; symbol: string }
  | { name: 'history'; symbol: string }
  | { name: 'changes' }
  | { name: 'usage' }
  | { name: 'bulk' }
  | { name: 'summary'; universe: string }
  | { name: 'dca'; symbol: string };

/** Longer paths than this are no route of ours. */
const MAX_PATH = 512;
/** Longer query strings than this are refused before any of it is read. */
const MAX_QUERY = 2048;

/** The parts of a request's URL the pipeline reads. */
export type Target = Pick<URL, 'pathname' | 'search' | 'searchParams'>;

/** The request's URL as the steps read it. */
export const requestTarget = (url: string): Target => new URL(url);

/** The methods every route takes (decisions 10 and 104): HEAD answers as GET would, without the body. */
export const READ_ONLY: readonly string[] = ['GET', 'HEAD'];
/** READ_ONLY as a 405's `Allow` names it. */
export const ALLOW = READ_ONLY.join(', ');

/** The method must be GET or HEAD: checked first, before the path means anything. */
export function readOnly(request: { method: string }): void {
  if (request.method !== 'GET' && request.method !== 'HEAD')
    throw new Refusal('method_not_allowed', `${request.method.slice(0, 16)} is not allowed on this path; use GET or HEAD`, {
      Allow: ALLOW,
    });
}

/** The route a GET request names. */
export function routeOf(url: Target): Route {
  const r = route(url.pathname);
  if (!r) throw new Refusal('not_found', 'No such endpoint; see /v1/openapi.json and /docs');
  return r;
}

/** A query string any route may be asked with. */
export function boundedQuery(url: Target): void {
  if (url.search.length > MAX_QUERY) throw new Refusal('bad_parameter', `The query string is longer than ${MAX_QUERY} characters`);
}

function route(pathname: string): Route | null {
  if (pathname.length > MAX_PATH || !pathname.startsWith('/v1/')) return null;
  const raw = pathname.slice(4).split('/');
  // A segment that does not decode stays as sent: in a symbol's place it is then 400 bad_symbol, not 404.
  const seg = pathname.includes('%')
    ? raw.map((s) => {
        try {
          return decodeURIComponent(s);
        } catch {
          return s;
        }
      })
    : raw;
  const [a, b, c] = seg;
  switch (seg.length) {
    case 1:
      if (a === 'health') return { name: 'health' };
      if (a === 'openapi.json') return { name: 'openapi' };
      if (a === 'assets') return { name: 'assets' };
      if (a === 'changes') return { name: 'changes' };
      if (a === 'usage') return { name: 'usage' };
      return null;
    case 2:
      return a === 'bulk' && b === 'risk' ? { name: 'bulk' } : null;
    case 3:
      if (a === 'assets' && c === 'risk') return { name: 'risk', symbol: b! };
      if (a === 'assets' && c === 'history') return { name: 'history', symbol: b! };
      if (a === 'market' && c === 'summary') return { name: 'summary', universe: b! };
      if (a === 'signals' && b === 'dca') return { name: 'dca', symbol: c! };
      return null;
    default:
      return null;
  }
}
