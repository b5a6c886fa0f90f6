/**
 * One server under load, in its own process; prints its URL. Args: kind, tree folder, key file, access-log file.
 *   shim          the shim on one fixed key, its clock moving a minute per 50 requests (every request counted)
 *   shim-quiet    the same with `--log-level silent`
 *   paid-<store>  the shim as paying callers meet it, on the real clock: quotas in `memory`, `sqlite` or `redis`
 *   reference     bare node:http doing the least an honest metered gateway does (reference.ts), counting in
 *                 memory; `reference-redis` counting in Redis
 *   fastify       Fastify with @fastify/rate-limit and its logger doing the paid direct-key job (fastify.ts)
 *   bare          node:http sending the shim's bytes and nothing else
 *   static        serve-handler serving the tree's files
 * The shims, the reference and Fastify write their access log where `serve` sends it in production: a file
 * (`serve`'s stdout, redirected by its process manager).
 */
import { credentialHeaders } from '../auth-shim/credentials.js';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import handler from 'serve-handler';
import { startServer } from '../auth-shim/node/server.js';
import { openQuotaStore } from '../auth-shim/node/quota-stores.js';
import { redisWithFallback } from '../auth-shim/node/quota-redis.js';
import { createLogger } from '../auth-shim/node/observe.js';
import { MARKETPLACE } from './marketplace.js';
import { referenceServer } from './reference.js';

const [kind, publicDir, keysFile, logFile] = process.argv.slice(2) as [string, string, string, string];
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
/** The run's own Redis keys (paid.ts removes them after): never the default prefix a shim on the same Redis counts under. */
const redisPrefix = process.env.BENCH_REDIS_PREFIX ?? 'rr-bench:';
const listen = (server: ReturnType<typeof createServer>) =>
  new Promise<string>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as { port: number }).port}`)),
  );

let url: string;
if (kind === 'shim' || kind === 'shim-quiet') {
  // Every request is counted for real; the clock moves a minute per 50 requests so the load never meets the
  // ultra plan's 60 per minute (a load test from one key would otherwise measure 429s).
  let t = Date.UTC(2026, 9, 14);
  let n = 0;
  // A month passes every 400,000 requests, under the ultra plan's 500,000 a month.
  const clock = () => {
    n++;
    if (n % 400_000 === 0) t += 31 * 86_400_000;
    if (n % 50 === 0) t += 61_000;
    return t;
  };
  const logger = kind === 'shim' ? createLogger('info', logFile) : createLogger('silent');
  url = (await startServer({ publicDir, keysFile, port: 0, watchMs: 0, now: clock, logger })).url;
} else if (kind === 'bare') {
  const body = readFileSync(join(publicDir, 'v1/assets/BTC/risk.json'));
  const manifest = JSON.parse(readFileSync(join(publicDir, 'v1/_manifest.json'), 'utf8'));
  // The same response as the shim's, headers included (the RateLimit values fixed): the same bytes on the wire.
  const headers = {
    'Content-Type': 'application/json; charset=utf-8',
    ETag: `"${manifest.files['assets/BTC/risk.json'].sha256}"`,
    'Cache-Control': 'private, max-age=60',
    Vary: `${credentialHeaders({}).join(', ')}, Accept-Encoding`,
    'RateLimit-Limit': '60',
    'RateLimit-Remaining': '59',
    'RateLimit-Reset': '30',
    'X-RateLimit-Requests-Limit': '500000',
    'X-RateLimit-Requests-Remaining': '499999',
    'X-RateLimit-Requests-Reset': '1500000',
  };
  url = await listen(
    // Each response with an id of its own, as the shim sends (decision 31).
    createServer((_req, res) => {
      res.writeHead(200, { ...headers, 'X-Request-Id': randomUUID(), 'Content-Length': String(body.length) });
      res.end(body);
    }),
  );
} else if (kind === 'reference' || kind === 'reference-redis') {
  const redis = kind === 'reference-redis' ? { url: redisUrl, prefix: `${redisPrefix}ref:` } : undefined;
  url = await listen(await referenceServer({ publicDir, keysFile, logFile, redis }));
} else if (kind.startsWith('paid-')) {
  // The path paying callers take, on the real clock: direct keys counted in the named store, and the
  // marketplace's proxy-secret path (counted by the marketplace).
  const spec = kind.slice('paid-'.length);
  const log = (m: string) => process.stderr.write(m + '\n');
  // Redis as `openQuotaStore` opens it, under the run's own prefix.
  const quotas =
    spec === 'redis'
      ? redisWithFallback(redisUrl, log, undefined, redisPrefix)
      : await openQuotaStore(spec === 'sqlite' ? join(publicDir, `.bench-quotas-${process.pid}.sqlite`) : 'memory', log);
  url = (
    await startServer({
      publicDir,
      keysFile,
      port: 0,
      watchMs: 0,
      quotas,
      marketplaceHost: MARKETPLACE.host,
      marketplaceSecret: MARKETPLACE.secret,
      logger: createLogger('info', logFile),
    })
  ).url;
} else if (kind === 'fastify') {
  // Loaded only here: the other servers' processes hold none of Fastify.
  const { fastifyServer } = await import('./fastify.js');
  url = await fastifyServer({ publicDir, keysFile, logFile });
} else if (kind === 'static') {
  url = await listen(createServer((req, res) => handler(req, res, { public: publicDir })));
} else {
  throw new Error(`bench/server: no server kind ${kind}`);
}
process.stdout.write(url + '\n');
process.on('SIGINT', () => process.exit(0));
