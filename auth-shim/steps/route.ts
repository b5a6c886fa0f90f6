/**
 * Step: route. Maps a GET request onto the API's ten routes; anything else is refused (405 with Allow: GET, 404,
 * or 400 for an overlong query). Segments are decoded once and never reach a file path.
 */
import { Refusal } from '../refusal.js';

/** What a request names. Read-only: a plain target's route is shared by every request for its URL. */
export type Route = Readonly<
  | { name: 'health' }
  | { name: 'openapi' }
  | { name: 'assets' }
  | { name: 'risk'; symbol: string }
  | { name: 'history'; symbol: string }
  | { name: 'changes' }
  | { name: 'usage' }
  | { name: 'bulk' }
  | { name: 'summary'; universe: string }
  | { name: 'dca'; symbol: string }
>;

/** Longer paths than this are no route of ours. */
const MAX_PATH = 512;
/** Longer query strings than this are refused before any of it is read. */
const MAX_QUERY = 2048;

/** The parts of a request's URL the pipeline reads. */
export type Target = Pick<URL, 'pathname' | 'search' | 'searchParams'>;

/**
 * An absolute URL whose path has nothing the URL parser would change (no percent sign, no dot segment, no character
 * it would encode) and no query or fragment: the path as it stands. Most requests are such; parsing them costs the
 * Node server a few per cent of its request rate.
 */
const PLAIN = /^https?:\/\/[^/?#\\]+\/[\w\-/.]*$/;

class PlainTarget implements Target {
  readonly search = '';
  /** The route the path names, once asked (routeOf); undefined until then. */
  route: Route | null | undefined;
  constructor(readonly pathname: string) {}
  /** Made when asked: a shared one could be changed by one request under another. */
  get searchParams(): URLSearchParams {
    return new URLSearchParams();
  }
}

/**
 * Plain targets already read, by URL, with their routes: an API's callers ask for a few paths again and again, and
 * reading each anew (the pattern, the slices, the split) cost the Node server a few per cent of its request rate.
 * A target and its route never change once read, so requests share them. Bounded: a flood of distinct paths empties
 * it, never grows it.
 */
const plainTargets = new Map<string, PlainTarget>();
const MAX_PLAIN_TARGETS = 4096;

/** The request's URL as the steps read it: parsed by the URL parser unless it is plain. */
export function requestTarget(url: string): Target {
  const known = plainTargets.get(url);
  if (known) return known;
  // A test, not an exec: a match's captures cost more than slicing the path off after it.
  if (!PLAIN.test(url)) return new URL(url);
  const path = url.slice(url.indexOf('/', url.indexOf('//') + 2));
  if (path.includes('/.')) return new URL(url);
  if (plainTargets.size >= MAX_PLAIN_TARGETS) plainTargets.clear();
  const target = new PlainTarget(path);
  plainTargets.set(url, target);
  return target;
}

/** The method must be GET (decision 10): checked first, before the path means anything. */
export function getOnly(request: { method: string }): void {
  if (request.method !== 'GET')
    throw new Refusal('method_not_allowed', `${request.method.slice(0, 16)} is not allowed: the API is read-only; use GET`, {
      Allow: 'GET',
    });
}

/** The route a GET request names. */
export function routeOf(url: Target): Route {
  const r = url instanceof PlainTarget ? (url.route === undefined ? (url.route = route(url.pathname)) : url.route) : route(url.pathname);
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
