/**
 * The request pipeline as one runtime-neutral function, composed of steps (steps/): route, credential, quota,
 * parameters and access, body. A step refuses by throwing a Refusal; the handler answers it with the spec's
 * status and error body. No `node:` import here; the origin and the quota store are injected. `createShim` reads
 * and makes the shim's own request and response (exchange.ts), which the Node server reads from and writes to its
 * socket; `createHandler` is the same pipeline as a fetch handler, for the edge and for tests.
 */
import { TREE, type ErrorCode, type Plan } from '../generator/contract/index.js';
import type { Catalog } from '../generator/contract/shapes.js';
import { BrowserAccess, type CorsOptions } from './cors.js';
import { credentialHeaders, type Caller, type KeyStore, type MarketplaceConfig } from './credentials.js';
import { docsResponse, type DocsFiles } from './docs.js';
import { Health } from './health.js';
import { next, recovering, type Maybe } from './maybe.js';
import { JsonCache, OriginError, type Origin } from './origin.js';
import { MemoryQuotaStore, type QuotaStore } from './quota.js';
import { toWebResponse, type ShimRequest, type ShimResponse } from './exchange.js';
import { Refusal, refusalResponse } from './refusal.js';
import { webCompressor, type Compressor } from './representation.js';
import { bulkAllowed, coveredAsset, coveredUniverse, signalAsset } from './steps/access.js';
import { Bodies } from './steps/body.js';
import { CredentialCheck, type KeySource } from './steps/credential.js';
import { bulkSymbols, changesQuery, historyQuery } from './steps/parameters.js';
import { answered, charged, headAnswered, monthUse } from './steps/quota.js';
import { boundedQuery, READ_ONLY, readOnly, requestTarget, routeOf, type Route, type Target } from './steps/route.js';
import { usageResponse } from './steps/usage.js';
import { publishedFeed } from './webhooks/feed.js';
import { ownerOf } from './webhooks/owner.js';
import { webhookMethod, webhookMethods, webhookResponse, webhookRoute, type WebhookOptions, type WebhookRoute } from './webhooks/routes.js';

export type { KeySource } from './steps/credential.js';
export type { HeaderSource, ShimRequest, ShimResponse } from './exchange.js';
export type { CorsOptions } from './cors.js';

export interface ShimOptions {
  origin: Origin;
  /** The direct-key store, fixed or live; null when none is configured. */
  keys: KeyStore | KeySource | null;
  quotas?: QuotaStore;
  marketplace?: MarketplaceConfig;
  now?: () => number;
  /** Called with unexpected errors (never with a key). */
  log?: (message: string) => void;
  /** Codings for composed bodies (default: gzip through CompressionStream). */
  compressor?: Compressor;
  /** The docs page's package files; without them /docs is 404. */
  docs?: DocsFiles;
  /** Health reads `stale` once the newest reading is older than this (decision 26; default 36 hours). */
  staleAfterMs?: number;
  /** Called once per request after its response is made: the access log and the metrics. */
  onResponse?: (event: AccessEvent) => void;
  /** The origins browsers may call from (decision 105); without them no data route answers a browser's preflight. */
  cors?: CorsOptions;
  /** Webhook endpoints and their deliveries (decision 108); without them `/v1/webhooks` is 404. */
  webhooks?: WebhookOptions;
}

/** One request as the access log and the metrics see it: never the key, only a short credential id. */
export interface AccessEvent {
  method: string;
  path: string;
  /** The response's X-Request-Id (decision 31). */
  request_id: string;
  /** The route's name (`risk`, `history`, ..., `docs`), or `none` when no route matched. */
  route: string;
  status: number;
  plan: Plan | null;
  credential: string | null;
  /** The error code when the response is an error. */
  code: ErrorCode | null;
  bytes: number;
  ms: number;
}

// Health and the document are public simple GETs any page may read (decision 24).
const ORIGIN_FAILED = new Refusal('upstream_error', 'The data origin could not be read');
/**
 * A webhook store that cannot be read or written just now (a SQLite database another process holds past the 50 ms
 * the server waits, a Redis that does not answer): retry, as from a server whose quota store is not open yet.
 */
const STORE_FAILED = new Refusal('gateway_not_configured', 'The webhook store could not be read or written just now; retry', {
  'Retry-After': '1',
});
/** The errors the engine raises for a mistake in code: logged with their stack wherever they come from. */
const CODE_MISTAKES = [TypeError, RangeError, ReferenceError, SyntaxError];
const PUBLIC_CACHE = { 'Cache-Control': 'public, max-age=60', 'Access-Control-Allow-Origin': '*' };

/** The pipeline as a fetch handler: web Request in, web Response out. */
export function createHandler(options: ShimOptions): (request: Request) => Promise<Response> {
  const shim = createShim(options);
  return async (request) => toWebResponse(await shim(request));
}

/** A response now, or once what it waits on (a key's first hash, a shared quota store, a cold file) is in. */
type Answer = Maybe<ShimResponse>;
/**
 * The pipeline on the shim's own request and response. Synchronous where everything it needs is in memory (a
 * known key, an in-memory quota store, a file the origin holds), so the Node server's hot path makes no promise.
 */
export function createShim(options: ShimOptions): (request: ShimRequest) => Answer {
  const { origin, marketplace = {}, log = () => {}, docs, onResponse } = options;
  const quotas = options.quotas ?? new MemoryQuotaStore();
  const now = options.now ?? Date.now;
  const json = new JsonCache(origin);
  const health = new Health(origin, json, options.staleAfterMs);
  const credentials = new CredentialCheck(options.keys, marketplace);
  const bodies = new Bodies(origin, json, options.compressor ?? webCompressor);
  // Responses depend on the caller's plan: caches must key them on every header a credential can arrive in.
  const dataCache = { 'Cache-Control': 'private, max-age=60', Vary: credentialHeaders(marketplace).join(', ') };
  const browsers = browserAccess(options.cors, marketplace);
  const feed = publishedFeed(json);

  /** Parameters, access and body of a data route, for a caller already admitted. */
  function serve(request: ShimRequest, url: Target, r: DataRoute, plan: Plan, headers: Record<string, string>): Answer {
    const out = { ...dataCache, ...headers };
    if (r.name === 'assets') return bodies.file(request, TREE.assetList(plan), out);
    if (r.name === 'changes') return bodies.changes(request, changesQuery(url.searchParams, plan), plan === 'basic' ? 'basic' : 'all', out);
    if (r.name === 'bulk') {
      bulkAllowed(plan);
      const requested = bulkSymbols(url.searchParams);
      return next(bodies.catalog(), (c) => bodies.bulk(request, c, requested, out));
    }
    return next(bodies.catalog(), (c: Catalog) => {
      switch (r.name) {
        case 'risk':
          return bodies.file(request, TREE.risk(coveredAsset(c, r.symbol, plan)), out);
        case 'dca':
          return bodies.file(request, TREE.dcaSignal(signalAsset(c, r.symbol, plan)), out);
        case 'summary':
          return bodies.file(request, TREE.summary(coveredUniverse(c, r.universe, plan)), out);
        case 'history':
          return bodies.history(request, coveredAsset(c, r.symbol, plan), historyQuery(url.searchParams, plan), out);
      }
    });
  }

  function handle(request: ShimRequest, url: Target, seen: Seen): Answer {
    const hook = url.pathname.startsWith('/v1/webhooks') ? webhookRoute(url.pathname) : null;
    if (hook) return webhooks(request, url, hook, seen);
    readOnly(request);
    const id = seen.id;
    if (docs && url.pathname.startsWith('/docs')) {
      return docsResponse(request, url.pathname, docs, id).then((page) => {
        if (page) return ((seen.route = 'docs'), page);
        return routed(request, url, seen);
      });
    }
    return routed(request, url, seen);
  }

  function routed(request: ShimRequest, url: Target, seen: Seen): Answer {
    const id = seen.id;
    const r = routeOf(url);
    seen.route = r.name;
    boundedQuery(url);
    if (r.name === 'health') return health.response(request, now(), { ...PUBLIC_CACHE, ...id });
    if (r.name === 'openapi') return bodies.file(request, TREE.openapi, { ...PUBLIC_CACHE, ...id });
    // One instant per request: the key's expiry (decision 37) and the quota windows are judged at the same time.
    const at = now();
    return next(credentials.caller(request.headers, at), (caller) => {
      seen.caller = caller;
      // The caller's own standing counts toward the minute, never the month (decision 36).
      const use = r.name === 'usage' ? 'minute' : monthUse(request);
      return next(charged(quotas, caller, at, use), (charge) => {
        const headers = charge ? { ...charge.headers, ...id } : id;
        if (r.name === 'usage') return usageResponse(caller, charge, headers);
        // A refusal or a failure after the charge still tells the caller where its quota stands.
        const refused = (e: unknown) => failed(e, headers);
        const res = recovering(() => serve(request, url, r, caller.plan, headers), refused);
        if (!charge) return res;
        // Only data counts toward the month (decisions 35 and 100): settled once the answer is known. A HEAD spends
        // none (decision 104), and is refused where the GET would be.
        const settle = (done: ShimResponse) =>
          use === 'minute' ? headAnswered(caller, charge, done, at) : answered(quotas, caller, charge, done, at);
        return recovering(() => next(res, settle), refused);
      });
    });
  }

  /** A webhook route (decision 108): the caller's own endpoints; counted toward the minute, never the month. */
  function webhooks(request: ShimRequest, url: Target, r: WebhookRoute, seen: Seen): Answer {
    seen.route = r.name === 'webhooks' ? 'webhooks' : `webhook${r.action ? `-${r.action}` : ''}`;
    webhookMethod(r, request.method);
    boundedQuery(url);
    const w = options.webhooks;
    if (!w) throw new Refusal('not_found', 'This gateway does not deliver webhooks');
    const at = now();
    return next(credentials.caller(request.headers, at), (caller) => {
      seen.caller = caller;
      const owner = ownerOf(caller, request.headers, marketplace);
      return next(charged(quotas, caller, at, 'minute'), (charge) => {
        const headers = charge ? { ...charge.headers, ...seen.id } : seen.id;
        return recovering(
          () => feed().then((f) => webhookResponse(w, r, request, caller, owner, f, at, headers)),
          (e) => failed(e, headers, STORE_FAILED),
        );
      });
    });
  }

  /**
   * What went wrong, answered: a refusal as itself; the origin's failure 502; anything else logged and answered
   * `otherwise` (on a webhook route, its store's failure), 502 by default. A store's failure (a Redis timeout) is
   * logged as its message; a mistake in code, as the engine raises it, with its stack.
   */
  function failed(e: unknown, headers: Record<string, string>, otherwise = ORIGIN_FAILED): ShimResponse {
    if (e instanceof Refusal) return refusalResponse(e, headers);
    if (e instanceof OriginError) {
      log(`shim: upstream: ${e.message}`);
      return refusalResponse(ORIGIN_FAILED, headers);
    }
    const storeSaid = otherwise === STORE_FAILED && e instanceof Error && !CODE_MISTAKES.some((c) => e instanceof c);
    log(storeSaid ? `shim: webhook store: ${e.message}` : `shim: unexpected ${(e as Error)?.stack ?? e}`);
    return refusalResponse(otherwise, headers);
  }

  function answer(request: ShimRequest, url: Target, seen: Seen): Answer {
    return recovering(
      () => handle(request, url, seen),
      (e) => failed(e, seen.id),
    );
  }

  return (request) => {
    const start = performance.now();
    const seen: Seen = { route: 'none', caller: null, id: { 'X-Request-Id': requestId(request.headers.get('x-request-id')) } };
    const logged = (res: ShimResponse) => {
      onResponse?.({
        method: request.method,
        path: url.pathname,
        request_id: seen.id['X-Request-Id'],
        route: seen.route,
        status: res.status,
        plan: seen.caller?.plan ?? null,
        credential: seen.caller?.id ?? null,
        code: res.code,
        bytes: res.body?.byteLength ?? 0,
        ms: performance.now() - start,
      });
      return res;
    };
    const url = requestTarget(request.url);
    if (!browsers) {
      const reply = answer(request, url, seen);
      return next(request.method === 'HEAD' ? next(reply, withoutBody) : reply, logged);
    }
    // Browsers, where the operator allows them (decision 105): a preflight answered before any step, counted nowhere.
    const allow = browsers.allowOrigin(request.headers.get('origin'));
    const hook = webhookRoute(url.pathname);
    const preflight = browsers.preflight(request, allow, hook ? webhookMethods(hook) : READ_ONLY, seen.id);
    if (preflight) return ((seen.route = 'preflight'), logged(preflight));
    const reply = answer(request, url, seen);
    return next(reply, (res) => logged(browsers.answer(request.method === 'HEAD' ? withoutBody(res) : res, allow)));
  };
}

/** The browsers' access a deployment allows (decision 105), or null when it names no origin: decisions 10 and 24 stand. */
export function browserAccess(cors: CorsOptions | undefined, marketplace: MarketplaceConfig = {}): BrowserAccess | null {
  return cors?.origins.length ? new BrowserAccess(cors, credentialHeaders(marketplace)) : null;
}

/** A HEAD's answer: the GET's status and headers, its Content-Length included, and no body. */
function withoutBody(res: ShimResponse): ShimResponse {
  if (!res.body) return res;
  return { ...res, headers: { ...res.headers, 'Content-Length': String(res.body.byteLength) }, body: null };
}

type DataRoute = Exclude<Route, { name: 'health' | 'openapi' | 'usage' }>;

/** What the pipeline learnt about a request on its way, for the access event. */
interface Seen {
  route: string;
  caller: Caller | null;
  /** The X-Request-Id header every response to this request carries. */
  id: { 'X-Request-Id': string };
}

/**
 * The request's id (decision 31): the caller's own X-Request-Id when it is 1-64 letters, digits, `.`, `_` or `-`,
 * so a support ticket can quote what the client logged; otherwise a new random one.
 */
export const requestId = (given: string | null): string => (given && /^[A-Za-z0-9._-]{1,64}$/.test(given) ? given : crypto.randomUUID());
