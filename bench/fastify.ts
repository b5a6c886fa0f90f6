/**
 * A second comparison for the paid direct-key path: Fastify with @fastify/rate-limit and its logger doing the
 * shim's job as a Fastify user would write it. The key in X-API-Key hashed (SHA-256) and looked up among the stored
 * keys (401 otherwise), a per-minute limit per key at its plan's rate (an LRU that holds every stored key), and the
 * reference's body and headers (the RateLimit-* ones the plugin's, for the minute; no month is counted). Fastify's
 * own request logging stays on (its two lines a request), into the access-log file through the destination the
 * shim's logger uses. Shown, not judged.
 */
import rateLimit from '@fastify/rate-limit';
import Fastify from 'fastify';
import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { credentialHeaders } from '../auth-shim/credentials.js';
import { errorBody, PLAN_LIMITS, type Plan } from '../generator/contract/index.js';
import { keyStoreFromJson } from '../generator/contract/keys.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The key's SHA-256 and its plan, once the key is known. */
    key: string;
    plan: Plan;
  }
}

/** Listens on a free port of 127.0.0.1; resolves with its URL. */
export async function fastifyServer(o: { publicDir: string; keysFile: string; logFile: string }): Promise<string> {
  const body = readFileSync(join(o.publicDir, 'v1/assets/BTC/risk.json'));
  const manifest = JSON.parse(readFileSync(join(o.publicDir, 'v1/_manifest.json'), 'utf8'));
  const keys = keyStoreFromJson(JSON.parse(readFileSync(o.keysFile, 'utf8')), o.keysFile);
  const headers = {
    'Content-Type': 'application/json; charset=utf-8',
    ETag: `"${manifest.files['assets/BTC/risk.json'].sha256}"`,
    'Cache-Control': 'private, max-age=60',
    Vary: `${credentialHeaders({}).join(', ')}, Accept-Encoding`,
  };
  const unauthorized = JSON.stringify(errorBody('unauthorized', 'The credential sent in X-API-Key is not valid'));
  const app = Fastify({
    logger: { level: 'info', stream: pino.destination({ dest: o.logFile, minLength: 4096, sync: false, periodicFlush: 1_000 }) },
    genReqId: () => randomUUID(),
  });
  app.decorateRequest('key', '');
  app.decorateRequest('plan', 'basic');
  app.addHook('onRequest', (req, reply, done) => {
    const hash = createHash('sha256')
      .update(String(req.headers['x-api-key'] ?? ''))
      .digest('hex');
    const rec = keys.get(hash);
    if (!rec) return void reply.code(401).header('Content-Type', 'application/json; charset=utf-8').send(unauthorized);
    req.key = hash;
    req.plan = rec.plan;
    done();
  });
  await app.register(rateLimit, {
    hook: 'preHandler',
    keyGenerator: (req) => req.key,
    max: (req) => PLAN_LIMITS[req.plan].perMinute,
    timeWindow: 60_000,
    cache: 50_000,
    enableDraftSpec: true,
  });
  app.get('/v1/assets/BTC/risk', (req, reply) => {
    reply.headers(headers).header('X-Request-Id', req.id).send(body);
  });
  return app.listen({ port: 0, host: '127.0.0.1' });
}
