/**
 * One server under load, in its own process: `shim` (its access log on, as `serve` runs by default), `shim-quiet`
 * (`--log-level silent`), `bare` (node:http sending the same bytes) or `static` (serve-handler). Prints its URL.
 */
import { credentialHeaders } from '../auth-shim/credentials.js';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import handler from 'serve-handler';
import { startServer } from '../auth-shim/node/server.js';
import { openQuotaStore } from '../auth-shim/node/quota-stores.js';
import { createLogger } from '../auth-shim/node/observe.js';
import { MARKETPLACE } from './marketplace.js';

const [kind, publicDir, keysFile] = process.argv.slice(2) as [string, string, string];
// The access log as `serve` writes it by default (level info, a JSON line per request), into /dev/null.
const logger = createLogger('info', '/dev/null');
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
  url = (
    await startServer({ publicDir, keysFile, port: 0, watchMs: 0, now: clock, logger: kind === 'shim' ? logger : createLogger('silent') })
  ).url;
} else if (kind === 'bare') {
  const body = readFileSync(join(publicDir, 'v1/assets/BTC/risk.json'));
  const manifest = JSON.parse(readFileSync(join(publicDir, 'v1/_manifest.json'), 'utf8'));
  // The same response as the shim's, headers included (the RateLimit values fixed): the same bytes on the wire.
  const headers = {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': String(body.length),
    ETag: `"${manifest.files['assets/BTC/risk.json'].sha256}"`,
    'Cache-Control': 'private, max-age=60',
    Vary: `${credentialHeaders({}).join(', ')}, Accept-Encoding`,
    'RateLimit-Limit': '60',
    'RateLimit-Remaining': '59',
    'RateLimit-Reset': '30',
  };
  url = await listen(
    // Each response with an id of its own, as the shim sends (decision 31).
    createServer((_req, res) => {
      res.writeHead(200, { ...headers, 'X-Request-Id': randomUUID() });
      res.end(body);
    }),
  );
} else if (kind.startsWith('paid-')) {
  // The path paying callers take, on the real clock: direct keys counted in the named store, and the
  // marketplace's proxy-secret path (counted by the marketplace).
  const spec = kind.slice('paid-'.length);
  const quotas = await openQuotaStore(
    spec === 'disk'
      ? join(publicDir, '.bench-quotas.json')
      : spec === 'redis'
        ? (process.env.REDIS_URL ?? 'redis://127.0.0.1:6379')
        : 'memory',
    (m) => process.stderr.write(m + '\n'),
  );
  url = (
    await startServer({
      publicDir,
      keysFile,
      port: 0,
      watchMs: 0,
      quotas,
      marketplaceHost: MARKETPLACE.host,
      marketplaceSecret: MARKETPLACE.secret,
      logger,
    })
  ).url;
} else {
  url = await listen(createServer((req, res) => handler(req, res, { public: publicDir })));
}
process.stdout.write(url + '\n');
process.on('SIGINT', () => process.exit(0));
