/**
 * How every reader of a private origin follows redirects (the edge's origin, the build's `--previous URL`): by
 * hand, and only within the origin it was configured with. Such a reader sends a bearer token with each request,
 * and a fetch that follows redirects itself would send it on to whatever host a redirect names (workerd does), so
 * the token would leave for another host with every request. A redirect to another origin is refused instead,
 * never requested; one within the origin is followed, a few hops at most.
 */

/** The most redirects followed for one file. */
const MAX_REDIRECTS = 5;

const REDIRECT = new Set([301, 302, 303, 307, 308]);

/** A redirect not followed: to another origin, without a Location, or one hop too many. */
export class RedirectRefused extends Error {
  constructor(
    /** The URL that answered with the redirect. */
    readonly url: string,
    /** Why it was not followed, without the URL. */
    readonly problem: string,
  ) {
    super(`${url}: ${problem}`);
  }
}

/** What a reader fetches with: the global fetch, or one that adds the origin's token to each request it makes. */
export type Fetcher = (url: string, init: RequestInit) => Promise<Response>;

/**
 * `fetcher(url, init)` with redirects followed within `url`'s origin: the first answer that is not a redirect.
 * Throws RedirectRefused (its message names the URL that redirected and where to) for any other redirect; the
 * body of each redirect is discarded.
 */
export async function fetchWithinOrigin(fetcher: Fetcher, url: string, init: RequestInit = {}): Promise<Response> {
  const origin = new URL(url).origin;
  let target = url;
  for (let hop = 0; ; hop++) {
    const res = await fetcher(target, { ...init, redirect: 'manual' });
    if (!REDIRECT.has(res.status)) return res;
    await res.body?.cancel().catch(() => {});
    const location = res.headers.get('location');
    if (!location) throw new RedirectRefused(target, `the origin answered ${res.status} without a Location`);
    const next = URL.canParse(location, target) ? new URL(location, target) : null;
    if (!next) throw new RedirectRefused(target, `the origin redirected to ${JSON.stringify(location)}, which is not a URL`);
    if (next.origin !== origin)
      throw new RedirectRefused(
        target,
        `the origin redirected to another origin (${next.origin}), which is not followed: its token is for ${origin} only; configure the URL that serves the tree itself`,
      );
    if (hop === MAX_REDIRECTS) throw new RedirectRefused(target, `more than ${MAX_REDIRECTS} redirects`);
    target = next.toString();
  }
}
