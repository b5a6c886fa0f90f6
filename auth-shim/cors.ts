/**
 * Browsers, where the operator allows them (decision 105). Without allowed origins none of this is on the path and
 * decisions 10 and 24 stand as they are. With them, every answer to a request whose `Origin` is allowed (a refusal,
 * a 304 and a 5xx included) says so and lets the page's script read the headers a client needs; the preflight of
 * such a request is answered here, before any step, so it is counted nowhere. An origin not allowed gets no CORS
 * header, and its preflight the 405 of any other OPTIONS. Every answer varies by `Origin` then, as the Fetch
 * standard asks of a response that does. Runtime-neutral.
 */
import { ANY_ORIGIN, allowedOrigin, ORIGIN_FORM } from '../generator/contract/cors.js';
import type { ShimRequest, ShimResponse } from './exchange.js';

/** The origins browsers may call from: exact origins (`https://dash.example.com`), or `*` for any. */
export interface CorsOptions {
  origins: readonly string[];
}

/**
 * What a page's script may read beyond the safelisted headers: the tag to revalidate with, where both quota windows
 * stand (every rate-limit header of decisions 6, 32 and 104), when to come back, and the id to quote.
 */
const EXPOSED = [
  'ETag',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'RateLimit-Policy',
  'RateLimit',
  'X-RateLimit-Requests-Limit',
  'X-RateLimit-Requests-Remaining',
  'X-RateLimit-Requests-Reset',
  'Retry-After',
  'X-Request-Id',
].join(', ');

/** How long a browser may keep a preflight's answer, in seconds. */
const MAX_AGE = '7200';

export class BrowserAccess {
  private readonly any: boolean;
  private readonly origins: ReadonlySet<string>;
  /** The headers a page may send on every route. */
  private readonly sent: readonly string[];

  /** `credentialHeaders`: every header a key can arrive in, which a preflight must allow a page to send. */
  constructor(options: CorsOptions, credentialHeaders: readonly string[]) {
    const origins = options.origins.map((o) => {
      const origin = allowedOrigin(o);
      if (origin === null) throw new Error(`"${o}" is not ${ORIGIN_FORM}`);
      return origin;
    });
    this.any = origins.includes(ANY_ORIGIN);
    this.origins = new Set(origins);
    this.sent = [...credentialHeaders, 'If-None-Match', 'X-Request-Id'];
  }

  /** `Access-Control-Allow-Origin` for a request's `Origin`: `*` where any is allowed, the origin itself, or null. */
  allowOrigin(origin: string | null): string | null {
    if (!origin) return null;
    return this.any ? ANY_ORIGIN : this.origins.has(origin) ? origin : null;
  }

  /**
   * The answer to a preflight (`OPTIONS` with `Access-Control-Request-Method`) from an allowed origin: 204, the
   * methods its route takes (`methods`) and the headers a page may send there: a route that takes a JSON body
   * (a webhook's POST or PATCH) allows `Content-Type` too. Null for any other request, which goes on.
   */
  preflight(request: ShimRequest, allow: string | null, methods: readonly string[], id: Record<string, string>): ShimResponse | null {
    if (!allow || request.method !== 'OPTIONS' || !request.headers.has('access-control-request-method')) return null;
    const body = methods.includes('POST') || methods.includes('PATCH');
    return {
      status: 204,
      headers: {
        'Access-Control-Allow-Origin': allow,
        'Access-Control-Allow-Methods': methods.join(', '),
        'Access-Control-Allow-Headers': (body ? [...this.sent, 'Content-Type'] : this.sent).join(', '),
        'Access-Control-Max-Age': MAX_AGE,
        Vary: 'Origin',
        ...id,
      },
      body: null,
      code: null,
    };
  }

  /** `res` as it goes out: varying by `Origin`, and readable by the page when its origin is allowed (`allow`). */
  answer(res: ShimResponse, allow: string | null): ShimResponse {
    const vary = res.headers.Vary;
    const headers: Record<string, string> = { ...res.headers, Vary: vary ? `${vary}, Origin` : 'Origin' };
    if (allow) {
      // Health and the document are public to any page already (decision 24): they keep `*`.
      if (headers['Access-Control-Allow-Origin'] !== ANY_ORIGIN) headers['Access-Control-Allow-Origin'] = allow;
      headers['Access-Control-Expose-Headers'] = EXPOSED;
    }
    return { ...res, headers };
  }
}
