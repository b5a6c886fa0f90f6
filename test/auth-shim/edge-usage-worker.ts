/**
 * The edge entry as the billing test runs it under workerd: the clock the test sets (edge-clock-worker.ts, so
 * requests fall in the months it names) and counters that report to the quota directory 100 ms after a change
 * instead of a minute (decision 98's bound), so the test waits for the report, not for the production delay.
 */
import { QuotaCounter as Counter } from '../../auth-shim/edge.js';

export { QuotaDirectory, WebhookEndpoint, WebhookOwner } from '../../auth-shim/edge.js';
export { default } from './edge-clock-worker.js';

export class QuotaCounter extends Counter {
  protected override reportMs = 100;
}
