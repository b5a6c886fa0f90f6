/**
 * The Node server's observability: one JSON access-log line per request (pino), and Prometheus metrics
 * (prom-client) on a port of their own, so a scrape never shares the API's address or counts against it.
 */
import { openSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import pino, { type Logger } from 'pino';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { AccessEvent } from '../handler.js';
import type { DeliveryObserver } from '../webhooks/deliverer.js';

/**
 * JSON lines on stdout (or appended to the file `dest`), time as ISO 8601, written in the background by pino's own
 * destination (sonic-boom), about 4 KB at a time, and flushed by it at least once a second, so a quiet server's
 * lines still show promptly. (Its own timer, not `logger.flush()`, which leaves a listener and an fsync waiting
 * for the next drain, and a busy destination may not drain for minutes.) What it still holds at exit is written
 * synchronously (pino registers that for its asynchronous destinations); the file is opened here, at once, so that
 * holds from the first line.
 */
export function createLogger(level: string = 'info', dest: number | string = 1): Logger {
  const fd = typeof dest === 'string' ? openSync(dest, 'a') : dest;
  return pino(
    { level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime },
    pino.destination({ dest: fd, minLength: 4096, sync: false, periodicFlush: 1_000 }),
  );
}

export interface Metrics extends DeliveryObserver {
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
  const attempts = new Counter({
    name: 'risk_readings_webhook_attempts_total',
    help: 'Webhook delivery attempts, by outcome (delivered: a 2xx answer; failed: anything else)',
    labelNames: ['outcome'],
    registers: [registry],
  });
  const lag = new Histogram({
    name: 'risk_readings_webhook_lag_seconds',
    help: "From the server's first sight of a refresh to the first attempt at each message of it",
    buckets: [0.1, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300],
    registers: [registry],
  });
  return {
    registry,
    attempt(outcome, lagMs) {
      attempts.inc({ outcome });
      if (lagMs !== null) lag.observe(lagMs / 1000);
    },
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

/** The access-log line of one request: the fields an operator filters on, never a key. */
export function logAccess(logger: Logger, e: AccessEvent): void {
  const level = e.status >= 500 ? 'error' : 'info';
  if (logger.isLevelEnabled(level)) logger[level]({ ...e, ms: Math.round(e.ms * 100) / 100 }, 'request');
}
