/** The Node server's SQLite webhook store, over a database file of its own per test, against the shared suite. */
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { SqliteWebhookStore } from '../../../auth-shim/node/webhooks-sqlite.js';
import { tempDir } from '../../helpers.js';
import { describeWebhookStore } from '../webhooks/store-suite.js';

const dir = tempDir('rr-webhooks-sqlite-');
let n = 0;

describeWebhookStore('SQLite', async () => {
  const db = new DatabaseSync(join(dir, `webhooks-${n++}.db`));
  return { store: new SqliteWebhookStore(db), close: async () => db.close() };
});
