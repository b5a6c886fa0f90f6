/**
 * One server delivers a refresh to 1,000 endpoints within 60 seconds of its publication (decision 108): a served
 * tree with 1,000 endpoints in the server's SQLite store, the next day's build swapped in, and every endpoint's
 * message timed from the swap to its arrival at a loopback receiver.
 */
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { startServer } from '../../../auth-shim/node/server.js';
import { SqliteWebhookStore } from '../../../auth-shim/node/webhooks-sqlite.js';
import { sampleEndpoint } from '../webhooks/endpoint.js';
import { buildSmall, smallSite, tempDir } from '../../helpers.js';
import { copiedTree, KEYS_FILE, treeJson } from '../tree.js';

const ENDPOINTS = 1_000;
const dir = tempDir('rr-wh-fanout-');

describe('webhooks: one server, 1,000 endpoints', () => {
  it('delivers the next refresh to every endpoint within 60 s of the swap', async () => {
    const out = copiedTree(dir);
    const arrived = new Map<string, number>();
    const receiver: Server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (!arrived.has(req.url!)) arrived.set(req.url!, Date.now());
        setTimeout(() => res.writeHead(204).end(), Math.random() * 50);
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
    const port = (receiver.address() as { port: number }).port;
    const db = new DatabaseSync(join(dir, 'hooks.sqlite'));
    const store = new SqliteWebhookStore(db);
    const through = treeJson(out, 'changes/ledger.json').events.length;
    for (let i = 0; i < ENDPOINTS; i++)
      await store.add(
        sampleEndpoint({
          id: `ep_${i.toString(16).padStart(24, '0')}`,
          // Marketplace users: their plan is the one they last called with, so no key file is needed for 1,000 owners.
          owner: `marketplace:user-${i}`,
          url: `http://127.0.0.1:${port}/${i}`,
          delivered_through: through,
        }),
        5,
      );
    // The tree is polled as serve polls it by default (every 5 s): part of the time measured.
    const server = await startServer({
      publicDir: out,
      keysFile: KEYS_FILE,
      port: 0,
      webhooks: store,
      webhookPolicy: { allowLoopback: true },
    });
    const pages = join(dir, 'day4');
    await smallSite(pages, 4);
    await buildSmall(pages, out, { now: '2026-10-17T00:30:00Z' });
    const swapped = Date.now();
    for (let waited = 0; arrived.size < ENDPOINTS && waited < 120_000; waited += 100) await new Promise((r) => setTimeout(r, 100));
    const lags = [...arrived.values()].map((t) => (t - swapped) / 1000).sort((a, b) => a - b);
    const p95 = lags[Math.ceil(0.95 * lags.length) - 1]!;
    console.log(
      `webhooks fan-out: ${arrived.size} of ${ENDPOINTS} endpoints; seconds from swap to arrival: p50 ${lags[lags.length >> 1]!.toFixed(1)}, p95 ${p95.toFixed(1)}, max ${lags.at(-1)!.toFixed(1)}`,
    );
    await server.drain();
    receiver.close();
    db.close();
    expect(arrived.size).toBe(ENDPOINTS);
    expect(lags.at(-1)!).toBeLessThanOrEqual(60);
  }, 300_000);
});
