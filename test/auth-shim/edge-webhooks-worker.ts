/**
 * The edge entry as the webhooks test runs it under workerd: the production worker, with endpoints' objects that
 * look for a new refresh every second instead of every 30 s (WEBHOOK_IDLE_MS), so the test waits for a delivery,
 * not for the production period. Everything else (the retry schedule, the sender, the address rules) is as deployed.
 */
import { WebhookEndpoint as Endpoint } from '../../auth-shim/edge.js';

export { QuotaCounter, QuotaDirectory, WebhookOwner } from '../../auth-shim/edge.js';
export { default } from '../../auth-shim/edge.js';

export class WebhookEndpoint extends Endpoint {
  protected override idleMs = 1_000;
}
