/**
 * The edge entry, for Workers-style runtimes: `export default { fetch }`. The tree is read over HTTP from
 * ORIGIN_URL; KEYS_JSON holds the credential store (decision 12 format); MARKETPLACE_HOST,
 * MARKETPLACE_SECRET and MARKETPLACE_NAME (default rapidapi) configure the marketplace pair. Quotas are counted
 * per isolate.
 */
import { keyStoreFromJson } from './credentials.js';
import { createHandler } from './handler.js';
import { HttpOrigin } from './http-origin.js';

export interface EdgeEnv {
  ORIGIN_URL: string;
  KEYS_JSON?: string;
  MARKETPLACE_HOST?: string;
  MARKETPLACE_SECRET?: string;
  MARKETPLACE_NAME?: string;
}

let cached: { env: EdgeEnv; handle: (r: Request) => Promise<Response> } | undefined;

function handlerFor(env: EdgeEnv) {
  if (cached?.env !== env) {
    cached = {
      env,
      handle: createHandler({
        origin: new HttpOrigin(env.ORIGIN_URL),
        keys: env.KEYS_JSON ? keyStoreFromJson(JSON.parse(env.KEYS_JSON), 'KEYS_JSON') : null,
        marketplace: { host: env.MARKETPLACE_HOST, secret: env.MARKETPLACE_SECRET, name: env.MARKETPLACE_NAME },
        log: (m) => console.error(m),
      }),
    };
  }
  return cached.handle;
}

export default {
  fetch(request: Request, env: EdgeEnv): Promise<Response> {
    return handlerFor(env)(request);
  },
};
