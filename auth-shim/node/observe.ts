/**
 * The Node server's observability: one JSON access-log line per request (pino), and Prometheus metrics
 * (prom-client) on a port of their own, so a scrape never shares the API's address or counts against it.
 */
import { writeSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import pino, { type DestinationStream, type Logger } from 'pino';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { AccessEvent } from '../handler.js';

/**
 * JSON lines on stdout (or into `dest`), time as ISO 8601. Lines are gathered into batches of about 8 KB and
 * written a batch at a time (a write per line costs requests per second under load), and at least once a second,
 * so a quiet server's lines still show promptly.
 */
export function createLogger(level: string = 'info', dest: number | string = 1): Logger {
  const logger = pino({ level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime }, batched(dest));
  setInterval(() => logger.flush(), 1_000).unref();
  return logger;
}

/** A batch is handed over once it holds this many bytes (lines are never split across batches). */
const BATCH = 8192;
/** Room for the line that crosses BATCH: twice BATCH, so an access line (some 300 bytes) always fits. */
const ROOM = 2 * BATCH;

/**
 * What each destination still holds, written at exit: one listener for every logger the process makes, and no
 * logger kept alive by it.
 */
const atExit = new Set<WeakRef<{ flushSync(): void }>>();
process.on('exit', () => {
  for (const ref of atExit) ref.deref()?.flushSync();
});

/**
 * pino's destination: each line copied as bytes into one batch buffer as it comes, while it is fresh in memory,
 * and the batch handed to sonic-boom (pino.destination, which writes in the background) as one flat string once
 * it holds about 8 KB. sonic-boom could batch the lines itself, but it keeps them as one string that it measures
 * again (Buffer.byteLength, walking and flattening the whole string) at every line, a cost that grows with the
 * batch; handed whole batches, it measures each once. The batch buffer is the logger's for its life, so logging
 * allocates no memory outside the heap (which would bring the heap's full collections sooner). Lines keep their
 * order, pino's own (warnings, reloads) and the access log's alike, as both are written here; at exit, what
 * sonic-boom holds and then the batch are written synchronously.
 */
function batched(dest: number | string): DestinationStream & { flush(cb?: (e?: Error) => void): void } {
  const sink = pino.destination({ dest, sync: false, minLength: 0 });
  const batch = Buffer.allocUnsafe(ROOM);
  let used = 0;
  const drain = () => {
    if (!used) return;
    const text = batch.toString('utf8', 0, used);
    used = 0;
    sink.write(text);
  };
  const destination = {
    write(line: string) {
      // At most three bytes of UTF-8 per UTF-16 unit: a line that might not fit goes after the batch, or alone.
      if (used + 3 * line.length > ROOM) {
        drain();
        if (3 * line.length > ROOM) return sink.write(line);
      }
      used += batch.write(line, used);
      if (used >= BATCH) drain();
      return true;
    },
    flush(cb?: (e?: Error) => void) {
      drain();
      sink.flush(cb);
    },
    flushSync() {
      try {
        sink.flushSync();
        // The descriptor sonic-boom opened (its typings leave the field out).
        if (used) writeSync((sink as unknown as { fd: number }).fd, batch, 0, used);
        used = 0;
      } catch {
        // a file sonic-boom is still opening (it opens in the background), or one gone: nothing can be written
      }
    },
  };
  atExit.add(new WeakRef(destination));
  return destination;
}

export interface Metrics {
  registry: Registry;
  onResponse(e: AccessEvent): void;
  treeReloaded(): void;
  keysReloaded(): void;
}

/** `treeBuiltAt` and `newestReading` are read at each scrape, so the ages are those of the tree being served. */
export function createMetrics(treeBuiltAt: () => string, newestReading: () => string | null): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: 'risk_readings_requests_total',
    help: 'Requests answered, by route and status',
    labelNames: ['route', 'status'],
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'risk_readings_request_duration_seconds',
    help: 'Time from request to response headers, by route',
    labelNames: ['route'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    registers: [registry],
  });
  const refusals = new Counter({
    name: 'risk_readings_quota_refusals_total',
    help: 'Requests refused by a quota window, by plan and code',
    labelNames: ['plan', 'code'],
    registers: [registry],
  });
  const ageOf = (iso: string | null) => (iso && Number.isFinite(Date.parse(iso)) ? (Date.now() - Date.parse(iso)) / 1000 : NaN);
  new Gauge({
    name: 'risk_readings_tree_age_seconds',
    help: 'Seconds since the served tree was built',
    registers: [registry],
    collect() {
      this.set(ageOf(treeBuiltAt()));
    },
  });
  new Gauge({
    name: 'risk_readings_newest_reading_age_seconds',
    help: 'Seconds since the newest reading in the served tree',
    registers: [registry],
    collect() {
      this.set(ageOf(newestReading()));
    },
  });
  const reloads = new Counter({
    name: 'risk_readings_reloads_total',
    help: 'Reloads of the served tree or of the key file',
    labelNames: ['what'],
    registers: [registry],
  });
  return {
    registry,
    onResponse(e) {
      requests.inc({ route: e.route, status: String(e.status) });
      latency.observe({ route: e.route }, e.ms / 1000);
      if (e.code === 'rate_limited' || e.code === 'quota_exceeded') refusals.inc({ plan: e.plan ?? 'none', code: e.code });
    },
    treeReloaded: () => reloads.inc({ what: 'tree' }),
    keysReloaded: () => reloads.inc({ what: 'keys' }),
  };
}

/** `GET /metrics` in the Prometheus text format; anything else 404. */
export function startMetricsServer(registry: Registry, port: number, host: string): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('GET /metrics\n');
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'Content-Type': registry.contentType }).end(text),
      (e) => res.writeHead(500, { 'Content-Type': 'text/plain' }).end(`${(e as Error).message}\n`),
    );
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}

/** ISO 8601 time as pino's isoTime writes it, made once per millisecond: many requests share one. */
let clock = { ms: 0, iso: '' };
function isoNow(): string {
  const ms = Date.now();
  if (ms !== clock.ms) clock = { ms, iso: new Date(ms).toISOString() };
  return clock.iso;
}

/** Printable ASCII but the quote and the backslash: a JSON string as it stands, between quotes. */
const VERBATIM = /^[ !#-[\]-~]*$/;
/** A text as a JSON string: quoted as it stands when nothing in it needs escaping, which is the common case. */
const str = (v: string | null) => (v === null ? 'null' : VERBATIM.test(v) ? `"${v}"` : JSON.stringify(v));

/**
 * The access-log line of one request: the fields an operator filters on, never a key. The line is the one pino
 * would write for `logger.info(fields, 'request')` (level, time, the fields, msg), serialised here for its fixed
 * fields and written to the logger's own destination, so it is batched and ordered with the other lines; pino's
 * generic serialiser cost a sixth of the request rate.
 */
export function logAccess(logger: Logger, e: AccessEvent): void {
  const level = e.status >= 500 ? 'error' : 'info';
  if (!logger.isLevelEnabled(level)) return;
  const line =
    `{"level":${logger.levels.values[level]},"time":"${isoNow()}","method":${str(e.method)},"path":${str(e.path)},` +
    `"request_id":${str(e.request_id)},"route":${str(e.route)},"status":${e.status},"plan":${str(e.plan)},` +
    `"credential":${str(e.credential)},"code":${str(e.code)},"bytes":${e.bytes},"ms":${Math.round(e.ms * 100) / 100},"msg":"request"}\n`;
  (logger as unknown as Record<symbol, { write(line: string): void }>)[pino.symbols.streamSym]!.write(line);
}
