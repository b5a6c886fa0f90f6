/**
 * The edge entry, for Workers-style runtimes: `export default { fetch }`. Bindings: ORIGIN_URL, where the tree's
 * `v1/` is served, and ORIGIN_TOKEN, the bearer token that private origin requires (so no file is reachable around
 * the shim); KEYS_JSON, the credential store (decision 12 format); MARKETPLACE_HOST, MARKETPLACE_SECRET and
 * MARKETPLACE_NAME (default rapidapi) for the marketplace pair; QUOTAS, a Durable Object namespace of
 * `QuotaCounter` (exported here), which shares each credential's counts across isolates. Without QUOTAS, counts
 * are per isolate. STALE_AFTER_HOURS, health's staleness limit (default 36). One JSON access line per request
 * goes to the console, the runtime's log.
 */
import { keyStoreFromJson } from './credentials.js';
import { bundledDocsFiles } from './edge-docs.js';
import { DurableQuotaStore, type DurableObjectNamespaceLike } from './durable-quota.js';
import { createHandler } from './handler.js';
import { HttpOrigin } from './http-origin.js';
import { FallbackQuotaStore, MemoryQuotaStore } from './quota.js';

export { QuotaCounter } from './durable-quota.js';

export interface EdgeEnv {
  ORIGIN_URL: string;
  ORIGIN_TOKEN?: string;
  KEYS_JSON?: string;
  MARKETPLACE_HOST?: string;
  MARKETPLACE_SECRET?: string;
  MARKETPLACE_NAME?: string;
  QUOTAS?: DurableObjectNamespaceLike;
  /** Health reads `stale` past this age of the newest reading, in hours (default 36). */
  STALE_AFTER_HOURS?: string;
}

/** The handler an environment's bindings describe. `now` is the clock: the real one but in the shared suite's run. */
export function edgeHandler(env: EdgeEnv, now?: () => number): (r: Request) => Promise<Response> {
  return createHandler({
    // The global fetch, called unbound: Workers runtimes refuse it called as a method of another object.
    origin: new HttpOrigin(
      env.ORIGIN_URL,
      60_000,
      env.ORIGIN_TOKEN ? (url, init) => fetch(url, { ...init, headers: { authorization: `Bearer ${env.ORIGIN_TOKEN}` } }) : undefined,
    ),
    quotas: env.QUOTAS ? new FallbackQuotaStore(new DurableQuotaStore(env.QUOTAS), (m) => console.error(m)) : new MemoryQuotaStore(),
    keys: env.KEYS_JSON ? keyStoreFromJson(JSON.parse(env.KEYS_JSON), 'KEYS_JSON') : null,
    marketplace: { host: env.MARKETPLACE_HOST, secret: env.MARKETPLACE_SECRET, name: env.MARKETPLACE_NAME },
    log: (m) => console.error(m),
    docs: bundledDocsFiles,
    staleAfterMs: env.STALE_AFTER_HOURS ? Number(env.STALE_AFTER_HOURS) * 3_600_000 : undefined,
    now,
    onResponse: (e) => console.log(JSON.stringify({ time: new Date().toISOString(), ...e, ms: Math.round(e.ms * 100) / 100 })),
  });
}

let cached: { env: EdgeEnv; handle: (r: Request) => Promise<Response> } | undefined;

export default {
  fetch(request: Request, env: EdgeEnv): Promise<Response> {
    if (cached?.env !== env) cached = { env, handle: edgeHandler(env) };
    return cached.handle(request);
  },
};
