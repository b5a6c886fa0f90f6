/**
 * The recipes of docs/webhooks.md, run as a customer copies them against `serve` (the CLI, loopback webhooks allowed,
 * as only tests and demos may): the create request, the five lines that verify a message (here, the test message a
 * loopback receiver got), and the replay from the feed by position.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers.js';
import { freePort } from '../services.js';
import { builtTree, KEY } from '../auth-shim/tree.js';
import { block } from './blocks.js';

const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const server = spawn(
  process.execPath,
  [
    join(ROOT, 'bin', 'risk-readings.js'),
    'serve',
    '--public',
    builtTree(),
    '--keys',
    join(ROOT, 'fixtures', 'keys', 'example-keys.json'),
    '--quotas',
    'memory',
    '--port',
    String(port),
    '--webhooks-allow-loopback',
  ],
  { stdio: ['ignore', 'ignore', 'pipe'] },
);
await new Promise<void>((resolve, reject) => {
  server.stderr.on('data', (d) => String(d).includes('serving') && resolve());
  server.once('exit', (code) => reject(new Error(`serve exited ${code}`)));
});
afterAll(() => void server.kill('SIGTERM'));

/** A recipe's shell block run with bash against this server, `KEY` and the extra environment given. */
const sh = (script: string, env: Record<string, string> = {}) =>
  spawnSync('bash', ['-o', 'pipefail', '-c', script.replaceAll('https://api.example.com', base)], {
    encoding: 'utf8',
    env: { ...process.env, KEY: KEY.ultra, ...env },
  });

describe('docs/webhooks.md, as a customer copies it', () => {
  it('creates an endpoint with the curl given, answered 201 with its secret once', () => {
    const r = sh(block('webhooks.md', 'sh', 'POST https://api.example.com/v1/webhooks'));
    expect(r.status, r.stderr).toBe(0);
    const made = JSON.parse(r.stdout).data;
    expect(made).toMatchObject({ url: 'https://hooks.example.com/risk-readings', symbols: ['BTC', 'ETH'], enabled: true });
    expect(made.secret).toMatch(/^whsec_/);
  });

  it('verifies a message with the five lines given, and they refuse one tampered with', async () => {
    let got: { body: string; headers: Record<string, string> } | undefined;
    const receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c));
      req.on('end', () => {
        got = { body, headers: req.headers as Record<string, string> };
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
    const hook = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
    const headers = { 'X-API-Key': KEY.ultra, 'content-type': 'application/json' };
    const made = (await (await fetch(`${base}/v1/webhooks`, { method: 'POST', headers, body: JSON.stringify({ url: hook }) })).json()).data;
    expect((await fetch(`${base}/v1/webhooks/${made.id}/test`, { method: 'POST', headers })).status).toBe(200);
    receiver.close();
    expect(got, 'the test message reached the receiver').toBeDefined();
    // The block, as written, with what a receiver holds in front of it: the raw body and the request's headers.
    const verify = (body: string) =>
      spawnSync(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `const body = process.env.BODY; const headers = JSON.parse(process.env.HEADERS);\n${block('webhooks.md', 'js', 'wh.verify(')}`,
        ],
        {
          cwd: ROOT,
          encoding: 'utf8',
          env: { ...process.env, BODY: body, HEADERS: JSON.stringify(got!.headers), RISK_READINGS_WEBHOOK_SECRET: made.secret },
        },
      );
    const ok = verify(got!.body);
    expect(ok.status, ok.stderr).toBe(0);
    const tampered = verify(got!.body.replace('webhook.test', 'webhook.tesT'));
    expect(tampered.status).not.toBe(0);
    expect(tampered.stderr).toMatch(/No matching signature found/);
  });

  it('replays the feed after a position with the curl given', () => {
    const r = sh(block('webhooks.md', 'sh', 'cursor=$LAST_POSITION'), { LAST_POSITION: '2' });
    expect(r.status, r.stderr).toBe(0);
    const events = JSON.parse(r.stdout).data.events as unknown[];
    expect(events.length).toBeGreaterThan(0);
    // cursor is exclusive: the first event is the feed's third.
    const all = JSON.parse(sh(block('webhooks.md', 'sh', 'cursor=$LAST_POSITION'), { LAST_POSITION: '0' }).stdout).data.events;
    expect(events[0]).toEqual(all[2]);
  });
});
