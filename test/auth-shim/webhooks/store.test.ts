/** The memory webhook store (one process alone, the tests) against the suite every webhook store passes. */
import { MemoryWebhookStore } from '../../../auth-shim/webhooks/store.js';
import { describeWebhookStore } from './store-suite.js';

describeWebhookStore('memory', async () => ({ store: new MemoryWebhookStore(), close: async () => {} }));
