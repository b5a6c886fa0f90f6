/**
 * The edge entry's handler under workerd on a clock the test sets: each request carries the instant it is made at in
 * `x-test-clock` (milliseconds), which the handler ignores as it ignores any header it does not read. So a test can
 * step the edge's clock across a key's expiry with the key store unchanged, as it does the Node server's.
 */
import { edgeHandler, type EdgeContext, type EdgeEnv, type EdgeHandler } from '../../auth-shim/edge.js';

export { QuotaCounter, QuotaDirectory, WebhookEndpoint, WebhookOwner } from '../../auth-shim/edge.js';

let clock = 0;
let handle: EdgeHandler | undefined;

export default {
  fetch: (request: Request, env: EdgeEnv, ctx: EdgeContext): Promise<Response> => {
    clock = Number(request.headers.get('x-test-clock'));
    return (handle ??= edgeHandler(env, () => clock))(request, ctx);
  },
};
