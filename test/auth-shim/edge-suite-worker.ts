/**
 * The edge entry as the shared suite runs it under workerd: the same handler the entry builds from its bindings,
 * with the clock moving a minute a request (as suite.ts's minuteClock), so the suite's many requests never meet a
 * per-minute quota.
 */
import { edgeHandler, type EdgeContext, type EdgeEnv, type EdgeHandler } from '../../auth-shim/edge.js';

export { QuotaCounter, QuotaDirectory, WebhookEndpoint, WebhookOwner } from '../../auth-shim/edge.js';

let t = Date.UTC(2026, 9, 14, 0, 0, 0);
let handle: EdgeHandler | undefined;

export default {
  fetch: (request: Request, env: EdgeEnv, ctx: EdgeContext): Promise<Response> =>
    (handle ??= edgeHandler(env, () => (t += 61_000)))(request, ctx),
};
