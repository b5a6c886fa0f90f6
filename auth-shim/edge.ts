/**
 * The edge entry, for Workers-style runtimes: `export default { fetch }` (deployed with wrangler.toml, docs/edge.md).
 * Bindings: ORIGIN_URL, where the tree's `v1/` is served (the folder holding it, or `v1/` itself), and
 * ORIGIN_TOKEN, the bearer token that private origin requires (so no file is reachable around the shim; it is sent
 * to that origin only); KEYS, a KV namespace whose `keys.json` is the credential store (decision 12 format), read
 * at run time (edge-keys.ts); ASSETS, the deployment's static assets holding Swagger UI's files for /docs
 * (edge-docs.ts); MARKETPLACE_HOST, MARKETPLACE_SECRET and MARKETPLACE_NAME (default rapidapi) for the marketplace
 * pair; QUOTAS, a Durable Object namespace of `QuotaCounter` (exported here), which shares each credential's counts
 * across isolates. Without QUOTAS, counts are per isolate. QUOTA_DIRECTORY, a Durable Object namespace of
 * `QuotaDirectory` (exported here), where the counters report their monthly totals, and OPERATOR_TOKEN, the secret
 * that opens the operator's route to them (`GET /_operator/usage`, edge-operator.ts, decision 98): without both, the
 * route does not exist. STALE_AFTER_HOURS, health's staleness limit (default 36). CORS_ORIGINS, the origins browsers
 * may call from (decision 105), separated by commas or spaces, `*` for any; none when empty. Webhooks (decision 108,
 * durable-webhooks.ts): WEBHOOKS, a Durable Object namespace of `WebhookEndpoint` (exported here), one object per
 * endpoint holding its record and recent attempts and delivering to it on its alarm, and WEBHOOK_OWNERS, one of
 * `WebhookOwner` (exported here), one object per owner listing its endpoints (the plan's limit counted there);
 * without both, `/v1/webhooks` is 404. WEBHOOKS_ALLOW_LOOPBACK = "true" admits loopback addresses, plain http and
 * any port as webhook URLs: for the tests and local development, never in production. WEBHOOKS_DOH_URL, the
 * DNS-over-HTTPS server a delivery's host is resolved with (default Cloudflare's; the tests point it at their own).
 * One JSON access line per request goes to the console, the runtime's log.
 */
import { allowedOrigin, ORIGIN_FORM, originList } from '../generator/contract/cors.js';
import { assetDocsFiles, type AssetsBinding } from './edge-docs.js';
import { KvKeys, type KvNamespaceLike } from './edge-keys.js';
import { DurableQuotaStore, type DurableObjectNamespaceLike } from './durable-quota.js';
import { edgeWebhooks, type WebhookEnv } from './durable-webhooks.js';
import { OPERATOR_PREFIX, operatorRoute } from './edge-operator.js';
import { createHandler, type AccessEvent } from './handler.js';
import { HttpOrigin } from './http-origin.js';
import { FallbackQuotaStore, MemoryQuotaStore } from './quota.js';

export { QuotaCounter, QuotaDirectory } from './durable-quota.js';
export { WebhookEndpoint, WebhookOwner } from './durable-webhooks.js';

export interface EdgeEnv extends WebhookEnv {
  ORIGIN_URL: string;
  ORIGIN_TOKEN?: string;
  KEYS?: KvNamespaceLike;
  ASSETS?: AssetsBinding;
  MARKETPLACE_HOST?: string;
  MARKETPLACE_SECRET?: string;
  MARKETPLACE_NAME?: string;
  QUOTAS?: DurableObjectNamespaceLike;
  QUOTA_DIRECTORY?: DurableObjectNamespaceLike;
  /** The operator's bearer token for `GET /_operator/usage` (a secret); without it the route does not exist. */
  OPERATOR_TOKEN?: string;
  /** Health reads `stale` past this age of the newest reading, in hours (default 36). */
  STALE_AFTER_HOURS?: string;
  /** The origins browsers may call from (decision 105): `https://dash.example.com`, `*`; commas or spaces between. */
  CORS_ORIGINS?: string;
}

/** The part of the runtime's execution context used here: work that may finish after the response. */
export interface EdgeContext {
  waitUntil(work: Promise<unknown>): void;
}

export type EdgeHandler = (request: Request, ctx?: EdgeContext) => Promise<Response>;

/** The handler an environment's bindings describe. `now` is the clock: the real one but in the shared suite's run. */
export function edgeHandler(env: EdgeEnv, now?: () => number): EdgeHandler {
  const log = (m: string) => console.error(m);
  const access = (e: AccessEvent) =>
    console.log(JSON.stringify({ time: new Date().toISOString(), ...e, ms: Math.round(e.ms * 100) / 100 }));
  const keys = env.KEYS ? new KvKeys(env.KEYS, log) : null;
  const webhooks = edgeWebhooks(env);
  const handle = createHandler({
    origin: new HttpOrigin(env.ORIGIN_URL, { token: env.ORIGIN_TOKEN }),
    quotas: env.QUOTAS ? new FallbackQuotaStore(new DurableQuotaStore(env.QUOTAS), log) : new MemoryQuotaStore(),
    keys,
    marketplace: { host: env.MARKETPLACE_HOST, secret: env.MARKETPLACE_SECRET, name: env.MARKETPLACE_NAME },
    log,
    docs: env.ASSETS ? assetDocsFiles(env.ASSETS) : undefined,
    staleAfterMs: env.STALE_AFTER_HOURS ? Number(env.STALE_AFTER_HOURS) * 3_600_000 : undefined,
    cors: { origins: corsOrigins(env.CORS_ORIGINS, log) },
    webhooks,
    now,
    onResponse: access,
  });
  const token = env.OPERATOR_TOKEN?.trim();
  const operator =
    token && (env.QUOTA_DIRECTORY || webhooks)
      ? operatorRoute({ token, directory: env.QUOTA_DIRECTORY, webhooks: webhooks?.store, log, access })
      : null;
  return async (request, ctx) => {
    // The operator's route, before the API: a request it does not take (no token, a wrong one) goes on to the API.
    if (operator && request.url.includes(OPERATOR_PREFIX)) {
      const res = await operator(request, (now ?? Date.now)());
      if (res) return res;
    }
    const reading = keys?.refresh(Date.now(), (work) => ctx?.waitUntil(work));
    if (reading) await reading;
    return handle(request);
  };
}

/**
 * CORS_ORIGINS as origins (decision 105). An entry that is no origin allows nothing and is logged when the isolate
 * starts, as serve's --cors-origin would refuse it; the others are in force.
 */
function corsOrigins(list: string | undefined, log: (m: string) => void): string[] {
  return originList(list).flatMap((v) => {
    const origin = allowedOrigin(v);
    if (origin === null) log(`shim: CORS_ORIGINS: "${v}" is not ${ORIGIN_FORM}; left out`);
    return origin === null ? [] : [origin];
  });
}

let cached: { env: EdgeEnv; handle: EdgeHandler } | undefined;

export default {
  fetch(request: Request, env: EdgeEnv, ctx: EdgeContext): Promise<Response> {
    if (cached?.env !== env) cached = { env, handle: edgeHandler(env) };
    return cached.handle(request, ctx);
  },
};
