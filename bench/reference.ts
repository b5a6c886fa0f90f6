/**
 * The reference the shim's paid paths are measured against: bare `node:http` doing the least an honest metered
 * gateway does per request, and nothing more. A direct key: its SHA-256, one lookup in the key store, one count
 * (a fixed minute and the month, in this process or in Redis, one round trip), one access-log line to a file. A
 * marketplace call: the pair's key hashed and looked up in the key store the same way (decision 13: a stored key
 * is accepted with its plan), and where it is none of ours, the host and the proxy secret checked (the secret in
 * constant time), the subscription read, one line. The line is the shim's own, written by the shim's own logger
 * (pino, batched, to a file): the log costs both sides the same, so the ratio measures what the shim does besides.
 * It answers with the shim's bytes: the same body, the same header names (values from its own count), 401 and 429
 * with the shim's error bodies. What it leaves out (the sliding minute, routing, plans' coverage, ETags per coding,
 * request ids taken from the caller) is the shim's to pay for.
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { credentialHeaders } from '../auth-shim/credentials.js';
import { createLogger, logAccess } from '../auth-shim/node/observe.js';
import { errorBody, PLAN_LIMITS, type Plan } from '../generator/contract/index.js';
import { keyStoreFromJson } from '../generator/contract/keys.js';
import { MARKETPLACE } from './marketplace.js';

export interface ReferenceOptions {
  publicDir: string;
  keysFile: string;
  /** The access log's file. */
  logFile: string;
  /** Count in Redis at this URL, under this key prefix, instead of in this process. */
  redis?: { url: string; prefix: string };
}

const MINUTE = 60_000;
/** One count per request: the minute's and the month's, both fixed windows, in one round trip. */
const COUNT = `
local m = redis.call('INCR', KEYS[1]); if m == 1 then redis.call('PEXPIRE', KEYS[1], 60000) end
local n = redis.call('INCR', KEYS[2]); if n == 1 then redis.call('PEXPIRE', KEYS[2], 2764800000) end
return {m, n}`;

export async function referenceServer(o: ReferenceOptions): Promise<ReturnType<typeof createServer>> {
  const body = readFileSync(join(o.publicDir, 'v1/assets/BTC/risk.json'));
  const manifest = JSON.parse(readFileSync(join(o.publicDir, 'v1/_manifest.json'), 'utf8'));
  const etag = `"${manifest.files['assets/BTC/risk.json'].sha256}"`;
  const keys = keyStoreFromJson(JSON.parse(readFileSync(o.keysFile, 'utf8')), o.keysFile);
  const logger = createLogger('info', o.logFile);
  const vary = `${credentialHeaders({}).join(', ')}, Accept-Encoding`;
  const secret = Buffer.from(MARKETPLACE.secret);
  const plans = new Map<string, Plan>([
    ['BASIC', 'basic'],
    ['PRO', 'pro'],
    ['ULTRA', 'ultra'],
  ]);
  const counts = new Map<string, { minuteStart: number; minute: number; month: number }>();
  const [redis, prefix] = o.redis ? [new Redis(o.redis.url), o.redis.prefix] : [];
  redis?.defineCommand('count', { numberOfKeys: 2, lua: COUNT });
  const monthOf = (now: number) => {
    const d = new Date(now);
    return { start: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1), end: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) };
  };
  let month = monthOf(Date.now());

  const refusal = (code: 'unauthorized' | 'rate_limited', message: string) => Buffer.from(JSON.stringify(errorBody(code, message)));
  const unauthorized = refusal('unauthorized', 'The credential sent in X-API-Key is not valid');

  function send(
    req: IncomingMessage,
    res: ServerResponse,
    start: number,
    plan: Plan | null,
    credential: string | null,
    used: { minute: number; month: number; resetMs: number } | null,
  ) {
    const id = randomUUID();
    const now = Date.now();
    let status = 200;
    let code: 'unauthorized' | 'rate_limited' | null = null;
    let out = body;
    let headers: Record<string, string>;
    if (!plan) {
      [status, code, out] = [401, 'unauthorized', unauthorized];
      headers = {
        'Content-Type': 'application/json; charset=utf-8',
        'Content-Length': String(out.length),
        'Cache-Control': 'no-store',
        'X-Request-Id': id,
        'WWW-Authenticate': 'ApiKey header="X-API-Key"',
      };
    } else {
      const limits = PLAN_LIMITS[plan];
      const rate: Record<string, string> = used
        ? {
            'RateLimit-Limit': String(limits.perMinute),
            'RateLimit-Remaining': String(Math.max(0, limits.perMinute - used.minute)),
            'RateLimit-Reset': String(Math.ceil(used.resetMs / 1000)),
            'X-RateLimit-Requests-Limit': String(limits.perMonth),
            'X-RateLimit-Requests-Remaining': String(Math.max(0, limits.perMonth - used.month)),
            'X-RateLimit-Requests-Reset': String(Math.ceil((month.end - now) / 1000)),
          }
        : {};
      if (used && used.minute > limits.perMinute) {
        const wait = Math.ceil(used.resetMs / 1000);
        [status, code] = [429, 'rate_limited'];
        out = refusal('rate_limited', `Quota exceeded: the ${plan} plan's ${limits.perMinute} requests per minute; retry in ${wait} s`);
        headers = {
          'Content-Type': 'application/json; charset=utf-8',
          'Content-Length': String(out.length),
          'Cache-Control': 'no-store',
          'X-Request-Id': id,
          'Retry-After': String(wait),
          ...rate,
        };
      } else {
        headers = {
          'Content-Type': 'application/json; charset=utf-8',
          ETag: etag,
          'Cache-Control': 'private, max-age=60',
          Vary: vary,
          ...rate,
          'X-Request-Id': id,
          'Content-Length': String(out.length),
        };
      }
    }
    res.writeHead(status, headers);
    res.end(out);
    logAccess(logger, {
      method: req.method ?? '',
      path: req.url ?? '',
      request_id: id,
      route: 'risk',
      status,
      plan,
      credential,
      code,
      bytes: out.length,
      ms: performance.now() - start,
    });
  }

  return createServer((req, res) => {
    const start = performance.now();
    const h = req.headers;
    const market = h['x-rapidapi-key'];
    // A pair's key is one of ours when the key store holds it (decision 13): hashed and looked up like a direct key,
    // and only when it is not, the proxy secret decides.
    const hash = createHash('sha256')
      .update(String(market ?? h['x-api-key'] ?? ''))
      .digest('hex');
    const rec = keys.get(hash);
    if (market !== undefined && !(rec && h['x-rapidapi-host'] === MARKETPLACE.host)) {
      const given = Buffer.from(String(h['x-rapidapi-proxy-secret'] ?? ''));
      const ok = h['x-rapidapi-host'] === MARKETPLACE.host && given.length === secret.length && timingSafeEqual(given, secret);
      const plan = ok ? (plans.get(String(h['x-rapidapi-subscription'])) ?? null) : null;
      return send(req, res, start, plan, plan && `marketplace:${plan}`, null);
    }
    if (!rec) return send(req, res, start, null, null, null);
    const credential = `key:${hash.slice(0, 8)}`;
    const now = Date.now();
    if (now >= month.end) month = monthOf(now);
    const minuteStart = now - (now % MINUTE);
    if (redis) {
      const count = (redis as unknown as { count(a: string, b: string): Promise<[number, number]> }).count;
      count.call(redis, `${prefix}${hash}:${minuteStart}`, `${prefix}${hash}:${month.start}`).then(
        ([minute, m]) => send(req, res, start, rec.plan, credential, { minute, month: m, resetMs: minuteStart + MINUTE - now }),
        () => res.destroy(),
      );
      return;
    }
    let c = counts.get(hash);
    if (!c) counts.set(hash, (c = { minuteStart, minute: 0, month: 0 }));
    if (c.minuteStart !== minuteStart) [c.minuteStart, c.minute] = [minuteStart, 0];
    c.minute++;
    c.month++;
    send(req, res, start, rec.plan, credential, { minute: c.minute, month: c.month, resetMs: minuteStart + MINUTE - now });
  });
}
