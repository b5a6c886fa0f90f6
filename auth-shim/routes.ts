/** Maps a request path onto the API's eight routes. Segments are decoded once and never reach a file path. */
export type Route =
  | { name: 'health' }
  | { name: 'openapi' }
  | { name: 'assets' }
  | { name: 'risk'; symbol: string }
  | { name: 'history'; symbol: string }
  | { name: 'bulk' }
  | { name: 'summary'; universe: string }
  | { name: 'dca'; symbol: string };

/** Longer paths than this are no route of ours. */
export const MAX_PATH = 512;

export function route(pathname: string): Route | null {
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
