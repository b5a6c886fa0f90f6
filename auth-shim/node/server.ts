/**
 * The Node entry: the shim on an HTTP server. The handler reads the request's own header object and its response
 * is written with writeHead and end: no web Request or Response is made on this path.
 */
import { readFileSync, statSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { errorBody, TREE, type ErrorCode } from '../../generator/contract/index.js';
import { compress, compressSync } from '../../generator/output/compress.js';
import { keyStoreFromJson, type KeyStore } from '../credentials.js';
import { browserAccess, createShim, requestId, type HeaderSource, type KeySource, type ShimResponse } from '../handler.js';
import { Refusal, refusalResponse } from '../refusal.js';
import { ALLOW } from '../steps/route.js';
import type { QuotaStore } from '../quota.js';
import type { AddressPolicy } from '../webhooks/address.js';
import { Deliverer, type Send } from '../webhooks/deliverer.js';
import { publishedFeed } from '../webhooks/feed.js';
import { ownerPlan } from '../webhooks/owner.js';
import { MemoryWebhookStore, type WebhookStore } from '../webhooks/store.js';
import { JsonCache } from '../origin.js';
import { WEBHOOK_BODY_MAX } from '../../generator/contract/webhooks.js';
import { sendWebhook } from './webhook-send.js';
import type { Compressor } from '../representation.js';
import { packageDocsFiles } from './docs-files.js';
import { FileOrigin } from './file-origin.js';
import { createLogger, createMetrics, logAccess, startMetricsServer } from './observe.js';

export interface ServeOptions {
  publicDir: string;
  keysFile?: string;
  port?: number;
  host?: string;
  marketplaceHost?: string;
  marketplaceSecret?: string;
  marketplaceName?: string;
  /**
   * Where quotas are counted. A promise when the store is still being opened (a quota file another process holds
   * until it has drained): the server listens at once and holds the requests it receives until the store is open,
   * or answers them 503 if it cannot be.
   */
  quotas?: QuotaStore | Promise<QuotaStore>;
  /** Bind with SO_REUSEPORT, so a new server can listen on the port of one still running (a rolling restart). */
  reusePort?: boolean;
  now?: () => number;
  watchMs?: number;
  /** Health reads `stale` past this age of the newest reading (default 36 hours). */
  staleAfterMs?: number;
  /** The access log and operational messages (default: none; `serve` logs JSON lines on stdout). */
  logger?: Logger;
  /** Serve Prometheus metrics on this port (same host); none without it. */
  metricsPort?: number;
  /** The origins browsers may call from (`serve --cors-origin`, decision 105): exact origins, or `*`. */
  corsOrigins?: string[];
  /** Webhook endpoints and their delivery state (decision 108; default: in memory); a promise while its store opens. */
  webhooks?: WebhookStore | Promise<WebhookStore>;
  /** Where webhooks may be sent (default: https on port 443, public addresses only). */
  webhookPolicy?: AddressPolicy;
  /** How a webhook is sent (default: over HTTPS, to an address the policy allows). */
  webhookSend?: Send;
  /** How often the deliverer looks for due work (default 1 s). */
  deliverEveryMs?: number;
}

export function loadKeys(file: string): KeyStore {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new Error(`${file}: cannot read the key store (${(e as Error).message})`, { cause: e });
  }
  return keyStoreFromJson(json, file);
}

/**
 * The key file, live (decision 22): polled every second, so a key added or revoked with `keys add` / `keys revoke`
 * (or by hand) is in force within 2 s, with no restart and no count reset. A file that no longer parses leaves the
 * previous store in force, and the log says why.
 */
export function liveKeys(
  file: string,
  log: (m: string) => void,
  pollMs = 1_000,
  onReload: () => void = () => {},
): KeySource & { close(): void } {
  // The file's identity is taken with the store it was read into, so a change made at any moment, even before
  // the first poll, is seen at the next one.
  const stamp = () => {
    try {
      const st = statSync(file);
      return `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch {
      return 'absent';
    }
  };
  let seen = stamp();
  let store = loadKeys(file);
  const timer = setInterval(() => {
    const now = stamp();
    if (now === seen) return;
    seen = now;
    try {
      store = loadKeys(file);
      onReload();
      log(`keys: reloaded ${file} (${store.size} keys)`);
    } catch (e) {
      log(`keys: ${(e as Error).message}; keeping the previous ${store.size} keys`);
    }
  }, pollMs);
  timer.unref();
  return { current: () => store, close: () => clearInterval(timer) };
}

/**
 * Brotli and gzip through zlib for composed bodies (history cuts, bulk), at the tree's own settings. Small ones
 * synchronously: for a body of a few rows a trip through zlib's thread pool costs more than the compression itself.
 * Large ones go to the pool so a 1,000-row page does not hold up other requests.
 */
const SYNC_BELOW = 64 * 1024;
const zlibCompressor: Compressor = {
  encodings: ['br', 'gzip'],
  compress: async (bytes, e) => {
    const out = bytes.byteLength >= SYNC_BELOW ? await compress(bytes, e) : compressSync(bytes, e);
    return new Uint8Array(out.buffer, out.byteOffset, out.byteLength) as Uint8Array<ArrayBuffer>;
  },
};

/**
 * A JSON error written straight to a socket: for requests Node's parser refuses before any handler runs. Headers
 * too large keep HTTP's own 431; anything else unparsable is 400.
 */
const REASONS: Record<number, string> = { 400: 'Bad Request', 405: 'Method Not Allowed', 431: 'Request Header Fields Too Large' };

/**
 * A refusal written to the socket itself, for what Node takes before the handler sees a request (a request it
 * cannot parse, a CONNECT tunnel); the access log gets its line as for any other request. Returns the body's size.
 */
function rawError(socket: Duplex, status: 400 | 405 | 431, code: ErrorCode, message: string, id: string): number {
  const body = JSON.stringify(errorBody(code, message));
  if (!socket.writable) return (void socket.destroy(), 0);
  const allow = status === 405 ? `Allow: ${ALLOW}\r\n` : '';
  socket.end(
    `HTTP/1.1 ${status} ${REASONS[status]}\r\n${allow}Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nCache-Control: no-store\r\nX-Request-Id: ${id}\r\nConnection: close\r\n\r\n${body}`,
  );
  // Closed once written, not when the client closes its side: one that never does (a slow-loris past the header
  // timeout) would hold its connection, and a file descriptor, for good.
  socket.once('finish', () => socket.destroy());
  return Buffer.byteLength(body);
}

/** Node's parsed headers as the handler reads them (Node has joined repeated ones with `, ` already). */
function headerSource(h: IncomingHttpHeaders): HeaderSource {
  return {
    get: (name) => {
      const v = h[name];
      return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v;
    },
    has: (name) => h[name] !== undefined,
  };
}

/** Requests are routed by path: the URL's origin is fixed, whatever Host says (an HTTP/1.0 probe sends none). */
const ORIGIN = 'http://localhost';

/**
 * The absolute URL of a request target, or null for one that names no path. A backslash, which the URL parser
 * would read as a slash, reaches the router escaped, as sent; `*` (OPTIONS *) names no resource of this API, and
 * the router answers it as the path `/*`, with a JSON error; an absolute target (a proxy's form) is taken whole.
 */
function requestUrl(target: string): string | null {
  const t = target.includes('\\') ? target.replaceAll('\\', '%5C') : target;
  if (t.startsWith('/')) return ORIGIN + t;
  if (t === '*') return `${ORIGIN}/*`;
  return /^https?:\/\/[^/?#]/i.test(t) && URL.canParse(t) ? t : null;
}

/** A ShimResponse on the socket: headers and body in one write; the connection closed after it when draining. */
function write(res: ServerResponse, r: ShimResponse, draining: boolean): void {
  res.writeHead(r.status, draining ? Object.assign({}, r.headers, { Connection: 'close' }) : r.headers);
  res.end(r.body ?? undefined);
}

/** A body its client stopped sending (it went away, or sent less than its Content-Length): the client's doing. */
const CUT_SHORT = new Refusal('bad_parameter', 'The request body ended before its Content-Length: the client stopped sending it');

/**
 * A request's body as text, for the routes that take one: at most WEBHOOK_BODY_MAX bytes are kept (the route
 * refuses a longer one), and a body far past it ends the connection rather than be read to its end.
 */
function bodyText(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.byteLength;
      if (size <= WEBHOOK_BODY_MAX + 1) chunks.push(c);
      else if (size > 64 * WEBHOOK_BODY_MAX) req.destroy();
    });
    req.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    // Node's `aborted` error: answered as a refusal (no stack in the log, no store failure), to a client long gone.
    req.once('error', () => reject(CUT_SHORT));
    req.once('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

/** How long a connection may sit idle once the server drains: one that long idle is not mid-request. */
const DRAIN_IDLE_MS = 1_000;
/** How long a drain waits for the requests in flight before it cuts what is left. */
const DRAIN_MS = 10_000;

export interface Started {
  server: Server;
  origin: FileOrigin;
  url: string;
  metricsUrl?: string;
  /** Settles once the quota store is open (at once unless ServeOptions.quotas was a promise), or cannot be. */
  ready: Promise<void>;
  /**
   * Stops accepting connections and resolves once every connection is gone: each request in flight is answered
   * (with `Connection: close`), idle keep-alive connections are closed, and whatever is left after DRAIN_MS is cut.
   */
  drain(): Promise<void>;
}

export async function startServer(o: ServeOptions): Promise<Started> {
  const origin = FileOrigin.open(o.publicDir, o.watchMs);
  const logger = o.logger ?? createLogger('silent');
  const log = (m: string) => logger.warn(m);
  const newestReading = () => {
    try {
      return (
        (JSON.parse(new TextDecoder().decode(origin.peek(TREE.health)?.bytes)) as { newest_reading?: string | null }).newest_reading ?? null
      );
    } catch {
      return null;
    }
  };
  const metrics = o.metricsPort !== undefined ? createMetrics(() => origin.builtAt, newestReading) : undefined;
  origin.onReload = () => {
    // A new tree may hold a refresh: the deliverer looks at once rather than at its next tick.
    void deliverer?.tick();
    metrics?.treeReloaded();
    logger.info({ built_at: origin.builtAt }, 'tree reloaded');
  };
  const keys = o.keysFile ? liveKeys(o.keysFile, log, 1_000, () => metrics?.keysReloaded()) : null;
  const marketplace = { host: o.marketplaceHost, secret: o.marketplaceSecret, name: o.marketplaceName };
  const cors = o.corsOrigins?.length ? { origins: o.corsOrigins } : undefined;
  // The answers made before the shim (below) reach a browser as the shim's own do (decision 105).
  const browsers = browserAccess(cors, marketplace);
  const browsable = (req: IncomingMessage, r: ShimResponse) =>
    browsers ? browsers.answer(r, browsers.allowOrigin(headerSource(req.headers).get('origin'))) : r;
  const policy = o.webhookPolicy ?? { allowLoopback: false };
  const send: Send = o.webhookSend ?? ((url, headers, body) => sendWebhook(url, headers, body, { policy }));
  let deliverer: Deliverer | undefined;
  const makeShim = (quotas: QuotaStore | undefined, webhooks: WebhookStore) =>
    createShim({
      webhooks: { store: webhooks, policy, send },
      origin,
      keys,
      marketplace,
      cors,
      quotas,
      now: o.now,
      log,
      compressor: zlibCompressor,
      docs: packageDocsFiles(),
      staleAfterMs: o.staleAfterMs,
      onResponse: (e) => {
        logAccess(logger, e);
        metrics?.onResponse(e);
      },
    });
  // The shim, once its quota store is open; until then requests wait, and if it cannot be opened they are refused.
  let shim: ReturnType<typeof createShim> | undefined;
  let unavailable = false;
  const open = (quotas: QuotaStore | undefined, webhooks: WebhookStore) => {
    shim = makeShim(quotas, webhooks);
    const now = o.now ?? Date.now;
    deliverer = new Deliverer({
      store: webhooks,
      feed: publishedFeed(new JsonCache(origin)),
      send,
      planOf: (e) => ownerPlan(keys?.current() ?? null, e, now()),
      now,
      log,
      observer: metrics,
    });
    deliverer.start(o.deliverEveryMs);
  };
  const webhookStore = o.webhooks ?? new MemoryWebhookStore();
  const ready =
    o.quotas instanceof Promise || webhookStore instanceof Promise
      ? Promise.all([o.quotas, webhookStore]).then(
          ([q, w]) => open(q, w),
          (e: unknown) => {
            unavailable = true;
            throw e;
          },
        )
      : Promise.resolve(open(o.quotas, webhookStore));
  ready.catch(() => {}); // the caller's to handle; the server answers 503 meanwhile
  let draining = false;
  /**
   * Which connections have a request whose answer is still to come: a drain closes the others. An answer made at
   * once is written before the server reads anything else, so only answers that wait (a cold file, a shared quota
   * store, a quota file still opening) are counted, and the hot path tracks nothing.
   */
  const busy = new Map<Duplex, number>();
  const waiting = (socket: Duplex, settled: Promise<void>) => {
    busy.set(socket, (busy.get(socket) ?? 0) + 1);
    void settled.finally(() => {
      const n = busy.get(socket)! - 1;
      if (n) busy.set(socket, n);
      else busy.delete(socket);
    });
  };
  const listen = { port: o.port ?? 8787, host: o.host ?? '127.0.0.1' };
  /** The access-log line of a request refused before the handler: method and path as far as they were read. */
  const refused = (method: string, path: string, status: number, code: ErrorCode, bytes: number, id: string) =>
    logAccess(logger, { method, path, request_id: id, route: 'none', status, plan: null, credential: null, code, bytes, ms: 0 });
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const url = requestUrl(req.url ?? '');
    if (url === null) {
      const id = requestId(headerSource(req.headers).get('x-request-id'));
      const refusal = refusalResponse(new Refusal('bad_parameter', 'The request target is not a path of this API'), { 'X-Request-Id': id });
      refused(req.method ?? '', (req.url ?? '').slice(0, 512), 400, 'bad_parameter', refusal.body!.byteLength, id);
      return write(res, browsable(req, refusal), draining);
    }
    if (!shim) {
      const again = () => handle(req, res);
      if (!unavailable) return void waiting(req.socket, ready.then(again, again));
      const id = requestId(headerSource(req.headers).get('x-request-id'));
      const refusal = refusalResponse(
        new Refusal('gateway_not_configured', 'This server cannot count quotas (its quota store could not be opened); retry', {
          'Retry-After': '1',
        }),
        { 'X-Request-Id': id },
      );
      refused(req.method ?? '', (req.url ?? '').slice(0, 512), 503, 'gateway_not_configured', refusal.body!.byteLength, id);
      return write(res, browsable(req, refusal), draining);
    }
    const answer = shim({ method: req.method ?? '', url, headers: headerSource(req.headers), text: () => bodyText(req) });
    if (!(answer instanceof Promise)) return write(res, answer, draining);
    waiting(
      req.socket,
      answer.then(
        (r) => write(res, r, draining),
        (e: unknown) => {
          // The pipeline answers every failure itself; this is the socket going away under the write.
          log(`shim: response not sent: ${(e as Error)?.message ?? e}`);
          res.destroy();
        },
      ),
    );
  };
  const server = createServer({ maxHeaderSize: 16_384, requireHostHeader: false }, handle);
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  // An idle keep-alive connection times out: closed, unless a request reached it meanwhile. Node would close it at
  // once, in the timers phase, before a loop that was held up reads a request already waiting on it; this looks
  // again after the next poll.
  server.on('timeout', (socket: Socket) => setImmediate(() => busy.has(socket) || socket.destroy()));
  server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    const id = requestId(headerSource(req.headers).get('x-request-id'));
    const bytes = rawError(socket, 405, 'method_not_allowed', 'Only GET and HEAD are allowed; this API is no proxy', id);
    refused('CONNECT', req.url ?? '', 405, 'method_not_allowed', bytes, id);
  });
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    // A client that reset or closed its side mid-message (a body cut short) is gone: no request to answer or log.
    if (err.code === 'ECONNRESET' || err.code === 'HPE_INVALID_EOF_STATE' || !socket.writable) return void socket.destroy();
    const overflow = err.code === 'HPE_HEADER_OVERFLOW';
    const status = overflow ? 431 : 400;
    const id = requestId(null);
    const message = overflow
      ? 'The request headers are larger than 16 KB'
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? `The request did not arrive in time: its headers within ${server.headersTimeout / 1000} s, all of it within ${server.requestTimeout / 1000} s`
        : 'The request is not valid HTTP/1.1';
    const bytes = rawError(socket, status, 'bad_parameter', message, id);
    refused('', '', status, 'bad_parameter', bytes, id);
  });
  const metricsServer = metrics && (await startMetricsServer(metrics.registry, o.metricsPort!, listen.host));
  server.on('close', () => {
    void deliverer?.stop();
    origin.close();
    keys?.close();
    metricsServer?.close();
    logger.flush();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: listen.port, host: listen.host, reusePort: o.reusePort ?? false }, () => resolve());
  });
  // Closed once the sockets are and the deliveries in flight have finished: the store may be closed then.
  const closed = new Promise<void>((resolve) => server.once('close', () => resolve())).then(() => deliverer?.stop());
  const drain = (): Promise<void> => {
    if (draining) return closed;
    draining = true;
    // net's close, not http's: http's also closes every idle keep-alive connection at once, and a request already
    // on its way on one would be lost. New connections go to a server sharing the port (reusePort); without one,
    // they are refused until the next server listens.
    NetServer.prototype.close.call(server);
    for (const socket of sockets) if (!busy.has(socket)) socket.setTimeout(DRAIN_IDLE_MS);
    setTimeout(() => server.closeAllConnections(), DRAIN_MS).unref();
    return closed;
  };
  const a = server.address() as { address: string; port: number };
  listen.port = a.port;
  const host = a.address.includes(':') ? `[${a.address}]` : a.address;
  const m = metricsServer?.address() as { port: number } | undefined;
  return {
    server,
    origin,
    url: `http://${host}:${a.port}`,
    ready,
    drain,
    ...(m ? { metricsUrl: `http://${host}:${m.port}/metrics` } : {}),
  };
}
