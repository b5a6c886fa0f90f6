/**
 * The request pipeline as one runtime-neutral function: route, credential, quota, plan, file. It computes nothing
 * about markets: every body is a file of the built tree, or a cut or merge of such files (history pages, bulk).
 * No `node:` import here; the origin and the quota store are injected.
 */
import {
  ERROR_STATUS,
  PLAN_LIMITS,
  PRECOMPUTED_PAGES,
  SYMBOL_PATTERN,
  TREE,
  UNIVERSE_PATTERN,
  bulkBody,
  errorBody,
  historyPage,
  toJson,
  type ErrorCode,
  type Ledger,
  type Plan,
  type RiskDoc,
} from '../generator/contract/index.js';
import type { Catalog } from '../generator/contract/shapes.js';
import {
  constantTimeEqual,
  credentialHeaders,
  identify,
  keyCaller,
  sha256Hex,
  type Caller,
  type KeyStore,
  type MarketplaceConfig,
} from './credentials.js';
import { docsResponse, type DocsFiles } from './docs.js';
import { Health } from './health.js';
import { JsonCache, OriginError, type Origin } from './origin.js';
import { bulkSymbols, historyQuery, isParamError } from './params.js';
import { charge, MemoryQuotaStore, type QuotaStore } from './quota.js';
import { bodyBytes, composedResponse, fileResponse, JSON_TYPE, sized, webCompressor, type Compressor } from './representation.js';
import { route, type Route } from './routes.js';

/** A key store that may change while the shim runs (a reloaded key file): read at every request. */
export interface KeySource {
  current(): KeyStore | null;
}

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
}

/** One request as the access log and the metrics see it: never the key, only a short credential id. */
export interface AccessEvent {
  method: string;
  path: string;
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
const PUBLIC_CACHE = { 'Cache-Control': 'public, max-age=60', 'Access-Control-Allow-Origin': '*' };
const FREE_NOTE = 'The free (basic) plan covers the top 10 crypto assets by market cap';
const MAX_QUERY = 2048;
const encoder = new TextEncoder();

class Refusal {
  constructor(
    readonly code: ErrorCode,
    readonly message: string,
  ) {}
}

/** The error body's code travels with the response to the access log. */
const CODES = new WeakMap<Response, ErrorCode>();

export function errorResponse(code: ErrorCode, message: string, headers: Record<string, string> = {}): Response {
  const bytes = encoder.encode(JSON.stringify(errorBody(code, message)));
  const res = new Response(bytes, {
    status: ERROR_STATUS[code],
    headers: { 'Content-Type': JSON_TYPE, 'Content-Length': String(bytes.byteLength), 'Cache-Control': 'no-store', ...headers },
  });
  CODES.set(res, code);
  return sized(res, bytes.byteLength);
}

/** A request string looks up only an object's own keys, never its prototype's (`constructor`, `__proto__`). */
const ownValue = <T>(o: Record<string, T>, key: string): T | undefined => (Object.hasOwn(o, key) ? o[key] : undefined);

export function createHandler(options: ShimOptions): (request: Request) => Promise<Response> {
  const { origin, keys, marketplace = {}, log = () => {}, compressor = webCompressor, docs, onResponse } = options;
  const quotas = options.quotas ?? new MemoryQuotaStore();
  const now = options.now ?? Date.now;
  const json = new JsonCache(origin);
  const health = new Health(origin, json, options.staleAfterMs);
  const source: KeySource = keys && 'current' in keys ? keys : { current: () => keys as KeyStore | null };
  // Responses depend on the caller's plan: caches must key them on every header a credential can arrive in.
  const dataCache = { 'Cache-Control': 'private, max-age=60', Vary: credentialHeaders(marketplace).join(', ') };
  // Verdicts by exact header value, each computed once (a key's SHA-256, a secret's constant-time compare) and
  // bounded, so neither the direct nor the marketplace path hashes on every request. A key store that changes
  // (a revoked key) empties them. The caller object is built once per key, so the hot path allocates nothing.
  const known = new Map<string, Caller>();
  const unknown = new Set<string>();
  const secrets = new Map<string, boolean>();
  let store: KeyStore | null | undefined;
  // 100,000 entries of a key and a small object: some tens of MB at most, and a fleet's worth of customers.
  const bounded = <T extends Map<string, unknown> | Set<string>>(m: T) => (m.size >= 100_000 && m.clear(), m);
  const keysNow = () => {
    const s = source.current();
    if (s !== store) {
      known.clear();
      unknown.clear();
      store = s;
    }
    return s;
  };
  const verify = {
    lookup: (key: string): Caller | undefined | Promise<Caller | undefined> => {
      const hit = known.get(key);
      if (hit || unknown.has(key) || !store) return hit;
      const keysAtStart = store;
      return sha256Hex(key).then((hash) => {
        if (keysAtStart !== store) return undefined; // reloaded meanwhile: the next request asks the new store
        const rec = store.get(hash);
        if (!rec) {
          bounded(unknown).add(key);
          return undefined;
        }
        const caller = keyCaller(rec);
        bounded(known).set(key, caller);
        return caller;
      });
    },
    secret: (value: string): boolean | Promise<boolean> => {
      const hit = secrets.get(value);
      if (hit !== undefined) return hit;
      return constantTimeEqual(value, marketplace.secret ?? '').then((ok) => (bounded(secrets).set(value, ok), ok));
    },
  };

  /** A file of the tree as the response; synchronous when the origin holds it in memory. */
  function file(request: Request, path: string, headers: Record<string, string>): Response | Promise<Response> {
    const hot = origin.peek?.(path);
    if (hot) return fileResponse(request, hot, headers);
    return origin.get(path).then((f) => {
      if (!f) throw new OriginError(`${path}: absent from the origin`);
      return fileResponse(request, f, headers);
    });
  }

  async function composed(request: Request, body: unknown, tagSource: string, extra: Record<string, string>): Promise<Response> {
    return composedResponse(request, encoder.encode(toJson(body)), await sha256Hex(tagSource), compressor, { ...dataCache, ...extra });
  }

  async function loadCatalog(): Promise<Catalog> {
    const c = await json.get<Catalog>(TREE.catalog);
    if (!c) throw new OriginError(`${TREE.catalog}: absent from the origin`);
    return c.doc;
  }

  function asset(c: Catalog, symbol: string, plan: Plan): string {
    if (!SYMBOL_PATTERN.test(symbol)) throw new Refusal('bad_symbol', 'A symbol is 1 to 20 letters, digits, _ . -');
    const canonical = ownValue(c.index, symbol.toUpperCase());
    if (!canonical) throw new Refusal('unknown_asset', `No asset ${symbol.toUpperCase()} is served`);
    if (plan === 'basic' && !c.assets[canonical]!.free_tier)
      throw new Refusal('plan_required', `${canonical} requires the pro or ultra plan; your plan is basic. ${FREE_NOTE}.`);
    return canonical;
  }

  async function serve(
    request: Request,
    url: URL,
    r: Exclude<Route, { name: 'health' | 'openapi' }>,
    plan: Plan,
    extra: Record<string, string>,
  ): Promise<Response> {
    const c = json.peek<Catalog>(TREE.catalog)?.doc ?? (await loadCatalog());
    switch (r.name) {
      case 'assets':
        return file(request, TREE.assetList(plan), { ...dataCache, ...extra });
      case 'risk':
        return file(request, TREE.risk(asset(c, r.symbol, plan)), { ...dataCache, ...extra });
      case 'dca': {
        const symbol = asset(c, r.symbol, plan);
        if (!c.assets[symbol]!.dca_signal) throw new Refusal('no_signal', `${symbol} has no regression model, so no DCA signal`);
        return file(request, TREE.dcaSignal(symbol), { ...dataCache, ...extra });
      }
      case 'summary': {
        if (!UNIVERSE_PATTERN.test(r.universe)) throw new Refusal('bad_universe', 'A universe name is 1 to 40 letters, digits, _ or -');
        const universe = Object.keys(c.universes).find((u) => u === r.universe.toLowerCase());
        if (!universe)
          throw new Refusal(
            'unknown_universe',
            `No universe ${r.universe.toLowerCase()}; the universes are ${Object.keys(c.universes).join(', ')}`,
          );
        if (plan === 'basic' && universe !== 'crypto')
          throw new Refusal(
            'plan_required',
            `The ${universe} summary requires the pro or ultra plan; your plan is basic. ${FREE_NOTE}, and the crypto summary.`,
          );
        return file(request, TREE.summary(universe), { ...dataCache, ...extra });
      }
      case 'history': {
        const symbol = asset(c, r.symbol, plan);
        const q = historyQuery(url.searchParams, plan);
        if (isParamError(q)) throw new Refusal(q.code, q.message);
        const ready = PRECOMPUTED_PAGES.find((p) => p.limit === q.limit && p.maxLimit === q.maxLimit);
        if (ready && !q.cursor && !q.from && !q.to) return file(request, TREE.historyPage(symbol, q.limit), { ...dataCache, ...extra });
        const full = await json.get<Ledger>(TREE.historyFull(symbol));
        if (!full) throw new OriginError(`${TREE.historyFull(symbol)}: absent from the origin`);
        return composed(
          request,
          historyPage(full.doc, q),
          `${full.etag}|${q.limit}|${q.maxLimit}|${q.cursor ?? ''}|${q.from ?? ''}|${q.to ?? ''}`,
          extra,
        );
      }
      case 'bulk': {
        if (!PLAN_LIMITS[plan].bulk)
          throw new Refusal(
            'plan_required',
            `The bulk endpoint requires the pro or ultra plan; your plan is basic. ${FREE_NOTE}, one asset per request.`,
          );
        const requested = bulkSymbols(url.searchParams);
        if (isParamError(requested)) throw new Refusal(requested.code, requested.message);
        const found: (RiskDoc | undefined)[] = [];
        const tags: string[] = [];
        for (const s of requested) {
          const canonical = ownValue(c.index, s.toUpperCase());
          const doc = canonical ? await json.get<RiskDoc>(TREE.risk(canonical)) : undefined;
          if (doc === null) throw new OriginError(`${TREE.risk(canonical!)}: absent from the origin`);
          found.push(doc?.doc);
          if (doc) tags.push(doc.etag);
        }
        const body = bulkBody(requested, found);
        return composed(request, body, `bulk|${requested.join(',')}|${tags.join('|')}`, extra);
      }
    }
  }

  async function handle(request: Request, url: URL, seen: Seen): Promise<Response> {
    if (request.method !== 'GET')
      return errorResponse('method_not_allowed', `${request.method.slice(0, 16)} is not allowed: the API is read-only; use GET`, {
        Allow: 'GET',
      });
    if (docs && url.pathname.startsWith('/docs')) {
      const page = await docsResponse(request, url.pathname, docs);
      if (page) return ((seen.route = 'docs'), page);
    }
    const r = route(url.pathname);
    if (!r) return errorResponse('not_found', 'No such endpoint; see /v1/openapi.json and /docs');
    seen.route = r.name;
    if (url.search.length > MAX_QUERY) return errorResponse('bad_parameter', `The query string is longer than ${MAX_QUERY} characters`);
    if (r.name === 'health') return health.response(request, now(), PUBLIC_CACHE);
    if (r.name === 'openapi') return file(request, TREE.openapi, PUBLIC_CACHE);
    if (keysNow() === null && !marketplace.secret)
      return errorResponse('gateway_not_configured', 'No credential source is configured on this gateway');
    // A direct key seen before needs no hashing and no wait; anything else goes through the full check.
    const direct = request.headers.get('x-api-key');
    const caller = (direct ? known.get(direct) : undefined) ?? (await identify(request.headers, marketplace, verify));
    if (!caller)
      return errorResponse('unauthorized', 'A valid X-API-Key header, or the x-marketplace-key and x-marketplace-host pair, is required');
    seen.caller = caller;
    let extra: Record<string, string> = {};
    if (caller.quotaKey) {
      const pending = charge(quotas, caller.quotaKey, caller.plan, now());
      const q = pending instanceof Promise ? await pending : pending;
      if (!q.ok) {
        const what =
          q.code === 'rate_limited'
            ? `the ${caller.plan} plan's ${PLAN_LIMITS[caller.plan].perMinute} requests per minute`
            : `the ${caller.plan} plan's ${PLAN_LIMITS[caller.plan].perMonth} requests this month (UTC)`;
        return errorResponse(q.code, `Quota exceeded: ${what}; retry in ${q.retryAfter} s`, {
          ...q.headers,
          'Retry-After': String(q.retryAfter),
        });
      }
      extra = q.headers;
    }
    try {
      return await serve(request, url, r, caller.plan, extra);
    } catch (e) {
      if (e instanceof Refusal) return errorResponse(e.code, e.message, extra);
      throw e;
    }
  }

  async function answer(request: Request, url: URL, seen: Seen): Promise<Response> {
    try {
      return await handle(request, url, seen);
    } catch (e) {
      log(e instanceof OriginError ? `shim: upstream: ${e.message}` : `shim: unexpected ${(e as Error)?.stack ?? e}`);
      return errorResponse('upstream_error', 'The data origin could not be read');
    }
  }

  return async (request) => {
    const start = performance.now();
    const url = new URL(request.url);
    const seen: Seen = { route: 'none', caller: null };
    const res = await answer(request, url, seen);
    if (onResponse) {
      onResponse({
        method: request.method,
        path: url.pathname,
        route: seen.route,
        status: res.status,
        plan: seen.caller?.plan ?? null,
        credential: seen.caller?.id ?? null,
        code: CODES.get(res) ?? null,
        bytes: bodyBytes(res),
        ms: performance.now() - start,
      });
    }
    return res;
  };
}

/** What the pipeline learnt about a request on its way, for the access event. */
interface Seen {
  route: string;
  caller: Caller | null;
}
