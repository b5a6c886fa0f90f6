// A deliverer alone, as `serve` runs it, for the kill test (webhooks-kill.test.ts): endpoints in a SQLite database,
// the feed read from a ledger file the test appends to, messages sent over loopback. Runs until it is killed.
// Usage: node deliver-child.mjs DATABASE LEDGER
import { readFileSync, statSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { sendWebhook } from '../../../dist/auth-shim/node/webhook-send.js';
import { SqliteWebhookStore } from '../../../dist/auth-shim/node/webhooks-sqlite.js';
import { Deliverer } from '../../../dist/auth-shim/webhooks/deliverer.js';
import { feedOf } from '../../../dist/auth-shim/webhooks/feed.js';

const [database, ledgerFile] = process.argv.slice(2);
const db = new DatabaseSync(database);
db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000');
const catalog = { assets: { BTC: { universes: ['crypto'] }, ETH: { universes: ['crypto'] }, NVDA: { universes: ['ai_infrastructure'] } } };
let seen = { stamp: '', feed: null };
const feed = () => {
  const st = statSync(ledgerFile);
  const stamp = `${st.size}:${st.mtimeMs}`;
  if (stamp !== seen.stamp) seen = { stamp, feed: feedOf(JSON.parse(readFileSync(ledgerFile, 'utf8')), catalog) };
  return Promise.resolve(seen.feed);
};
const policy = { allowLoopback: true };
const d = new Deliverer({
  store: new SqliteWebhookStore(db),
  feed,
  send: (url, headers, body) => sendWebhook(url, headers, body, { policy }),
  planOf: (e) => e.plan,
  log: (m) => process.stderr.write(`${m}\n`),
});
d.start(20);
// The deliverer's timer does not hold a process open (serve's server does): this one runs until it is killed.
const hold = () => setTimeout(hold, 1 << 30);
hold();
process.stdout.write('ready\n');
