/**
 * The deliverer killed at any instant loses no message (decision 108): a process delivering to three endpoints from a
 * SQLite database is killed with SIGKILL at random points while 200 refreshes are published; once it runs to the
 * end, every endpoint has received every message meant for it, the distinct ones in feed order, and any message
 * sent twice was the same message (same id, same bytes).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Webhook } from 'standardwebhooks';
import { afterAll, describe, expect, it } from 'vitest';
import type { ChangeEvent, ChangeLedger } from '../../../generator/contract/shapes.js';
import { SqliteWebhookStore } from '../../../auth-shim/node/webhooks-sqlite.js';
import { feedOf } from '../../../auth-shim/webhooks/feed.js';
import { nextMessage } from '../../../auth-shim/webhooks/messages.js';
import type { EndpointRecord } from '../../../auth-shim/webhooks/store.js';
import { sampleEndpoint } from '../webhooks/endpoint.js';

const CHILD = join(import.meta.dirname, 'deliver-child.mjs');
const REFRESHES = 200;
const dir = mkdtempSync(join(tmpdir(), 'rr-wh-kill-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Got {
  path: string;
  id: string;
  body: string;
  headers: Record<string, string>;
}

function receiver(got: Got[]): Promise<Server> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c));
    req.on('end', () => {
      got.push({ path: req.url!, id: String(req.headers['webhook-id']), body, headers: req.headers as Record<string, string> });
      // A few milliseconds' answer, so that some kills land between the send and its record.
      setTimeout(() => res.writeHead(200).end(), Math.random() * 20);
    });
  });
  return new Promise((r) => server.listen(0, '127.0.0.1', () => r(server)));
}

const started = (child: ChildProcess) =>
  new Promise<void>((ready, failed) => {
    child.stdout!.once('data', () => ready());
    child.once('exit', (code) => failed(new Error(`the deliverer exited (${code}) before it was ready`)));
  });
const exited = (child: ChildProcess) =>
  new Promise<void>((r) => (child.exitCode !== null || child.signalCode !== null ? r() : child.once('exit', () => r())));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('webhooks: the deliverer killed at random points', () => {
  it(`loses no message over ${REFRESHES} refreshes and SIGKILLs, sends them in feed order, and resends only the same message`, async () => {
    const got: Got[] = [];
    const server = await receiver(got);
    const port = (server.address() as { port: number }).port;
    const database = join(dir, 'hooks.sqlite');
    const ledgerFile = join(dir, 'ledger.json');
    const ledger: ChangeLedger = { started_at: '2026-10-14T00:30:00Z', events: [], basic: [] } as unknown as ChangeLedger;
    const publish = () => {
      writeFileSync(`${ledgerFile}.tmp`, JSON.stringify(ledger));
      renameSync(`${ledgerFile}.tmp`, ledgerFile);
    };
    publish();
    const db = new DatabaseSync(database);
    db.exec('PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 5000');
    const store = new SqliteWebhookStore(db);
    const endpoint = (name: string, filters: Partial<EndpointRecord>) =>
      sampleEndpoint({ id: `ep_${name.repeat(24)}`, owner: `label:${name}`, url: `http://127.0.0.1:${port}/${name}`, ...filters });
    const endpoints = [
      endpoint('a', {}),
      endpoint('b', { fields: ['gravity.risk_level'] }),
      endpoint('c', { universes: ['ai_infrastructure'] }),
    ];
    for (const e of endpoints) expect(await store.add(e, 5)).toBe(true);

    // Publishing: 200 refreshes of 1 to 4 events each, one every few milliseconds, while the deliverer is killed.
    let publishing = true;
    const publisher = (async () => {
      const symbols = ['BTC', 'ETH', 'NVDA'];
      for (let r = 0; r < REFRESHES; r++) {
        const at = new Date(Date.UTC(2026, 9, 14, 0, 30) + r * 60_000).toISOString().replace('.000Z', 'Z');
        for (let i = 0, n = 1 + Math.floor(Math.random() * 4); i < n; i++)
          ledger.events.push({
            published_at: at,
            symbol: symbols[Math.floor(Math.random() * 3)]!,
            universe: null,
            field: Math.random() < 0.5 ? 'gravity.risk_level' : 'dca.band',
            from: r,
            to: r + 1,
            model: null,
            as_of: null,
          } as unknown as ChangeEvent);
        publish();
        await sleep(40);
      }
      publishing = false;
    })();
    let kills = 0;
    let child: ChildProcess | null = null;
    const run = async () => {
      child = spawn(process.execPath, [CHILD, database, ledgerFile], { stdio: ['ignore', 'pipe', 'inherit'] });
      await started(child);
      return child;
    };
    while (publishing || kills < 20) {
      const c = await run();
      await sleep(Math.random() * 400);
      c.kill('SIGKILL');
      await exited(c);
      kills++;
    }
    await publisher;
    // The last run delivers everything that is left.
    const last = await run();
    const done = async () => (await store.list()).every((e) => e.delivered_through === ledger.events.length && e.pending === null);
    for (let waited = 0; !(await done()) && waited < 120_000; waited += 200) await sleep(200);
    last.kill('SIGKILL');
    await exited(last);
    server.close();

    const feed = feedOf(ledger, {
      assets: { BTC: { universes: ['crypto'] }, ETH: { universes: ['crypto'] }, NVDA: { universes: ['ai_infrastructure'] } },
    } as never);
    let [messages, resent] = [0, 0];
    for (const e of endpoints) {
      const expected: { id: string; body: string }[] = [];
      for (let at = 0, r = nextMessage(feed, e, 'pro', at); r.message; at = r.through, r = nextMessage(feed, e, 'pro', at))
        expected.push(r.message);
      const mine = got.filter((g) => g.path === `/${e.id.slice(3, 4)}`);
      const first = new Map<string, Got>();
      for (const g of mine) {
        const before = first.get(g.id);
        if (before) expect(g.body, `${g.id} sent again with other bytes`).toBe(before.body);
        else first.set(g.id, g);
      }
      expect([...first.keys()], `endpoint ${e.id}: the distinct messages received, in the order first received`).toEqual(
        expected.map((m) => m.id),
      );
      expect([...first.values()].map((g) => g.body)).toEqual(expected.map((m) => m.body));
      const verifier = new Webhook(e.secrets[0]!.key);
      for (const g of first.values()) expect(verifier.verify(g.body, g.headers)).toBeTruthy();
      messages += expected.length;
      resent += mine.length - first.size;
    }
    db.close();
    console.log(
      `webhooks kill run: ${REFRESHES} refreshes, ${ledger.events.length} events, ${kills} SIGKILLs; ${messages} messages expected, 0 lost, ${resent} sent twice`,
    );
    expect(kills).toBeGreaterThanOrEqual(20);
  }, 300_000);
});
