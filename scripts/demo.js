#!/usr/bin/env node
// `npm run demo`: synthesize the fixture site on two publication days, build the first into public/ and serve it
// through the shim on PORT (default 8787); subscribe a local receiver to the change feed with a webhook, build the
// second day (which continues the first's history and raises the feed's events), check the tree, and show the
// receiver getting that refresh's events, its signature verified with the standardwebhooks library.
import { Buffer } from 'node:buffer';
import { spawnSync, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const root = fileURLToPath(new URL('..', import.meta.url));
const cli = join(root, 'bin', 'risk-readings.js');
const HOST = '127.0.0.1';
const say = (line) => process.stderr.write(`demo: ${line}\n`);

// The port first, before anything is built or deleted: a taken port is found in a second, not after the builds.
const port = process.env.PORT ?? '8787';
if (!/^\d+$/.test(port) || Number(port) < 1 || Number(port) > 65_535) {
  say(`PORT=${port} is no port: give one from 1 to 65535, such as PORT=8788 npm run demo`);
  process.exit(2);
}
/** Why the port cannot be listened on (the error's code), or null when it can. */
const unavailable = (p) =>
  new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', (e) => resolve(e.code ?? e.message));
    probe.listen(Number(p), HOST, () => probe.close(() => resolve(null)));
  });
/** What to tell the user when the port cannot be had; exit 3, as `serve` does for a taken port. */
function portTaken(code) {
  const why = code === 'EADDRINUSE' ? 'is already in use (an earlier demo still running?)' : `cannot be listened on (${code})`;
  say(
    `port ${port} on ${HOST} ${why}. Stop what holds it, or run the demo on another port: PORT=${Number(port) === 8788 ? 8789 : 8788} npm run demo`,
  );
  process.exit(3);
}
const busy = await unavailable(port);
if (busy) portTaken(busy);

const step = (args) => {
  process.stdout.write(`\n$ risk-readings ${args.join(' ')}\n`);
  const r = spawnSync(process.execPath, [cli, ...args], { stdio: 'inherit', cwd: root });
  if (r.status !== 0) process.exit(r.status ?? 1);
};

// The demo's tree starts over each run: a day-1 build over an earlier run's day-2 tree would go back in time.
for (const generated of ['v1', '.trees', '.risk-readings-cache.json'])
  rmSync(join(root, 'public', generated), { recursive: true, force: true });
for (const day of [1, 2]) step(['fixtures', '--out', `.demo/site${day}`, '--day', String(day)]);
const build = (day, ...extra) =>
  step(['build', '--pages', `.demo/site${day}`, '--out', 'public', ...extra, '--now', `2026-10-${13 + day}T00:30:00Z`]);
build(1, '--init');
// Loopback webhooks are for demos and tests only: the receiver below is on this machine, over plain http.
const args = ['serve', '--public', 'public', '--keys', 'fixtures/keys/example-keys.json', '--port', port, '--webhooks-allow-loopback'];
process.stdout.write(`\n$ risk-readings ${args.join(' ')}\n`);
const server = spawn(process.execPath, [cli, ...args], { stdio: ['inherit', 'pipe', 'pipe'], cwd: root });
// serve's log (stdout: a JSON line per request) is held while the walkthrough runs, so that its lines do not land
// inside a build's output; it follows the list of requests to try, and goes straight through from then on.
let held = [];
server.stdout.on('data', (chunk) => (held ? held.push(chunk) : process.stdout.write(chunk)));
function release() {
  if (!held) return;
  if (held.length) process.stdout.write(`serve's log so far:\n${Buffer.concat(held)}`);
  held = null;
}
const base = `http://${HOST}:${port}`;
const PRO = 'rr_demo_pro_key_not_secret';
let listening = false;
let failed = false;
server.stderr.on('data', (chunk) => {
  process.stderr.write(chunk);
  if (listening || !String(chunk).includes('serving ')) return;
  listening = true;
  subscribeAndRefresh().catch((e) => {
    say(`the webhook step failed: ${e.message}`);
    release();
    failed = true;
    server.kill('SIGTERM');
  });
});

/**
 * A receiver on this machine, subscribed with the pro demo key; then the second refresh is built, and the receiver
 * shows what the server sends it, verified as a customer's code would verify it.
 */
async function subscribeAndRefresh() {
  let secret = '';
  const receiver = createHttpServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      res.writeHead(204).end();
      const message = new Webhook(secret).verify(body, req.headers);
      const lines = message.events
        .slice(0, 5)
        .map((e) => `    ${e.symbol ?? e.universe} ${e.field}: ${JSON.stringify(e.from)} -> ${JSON.stringify(e.to)}`);
      process.stdout.write(
        `\ndemo: the receiver got ${req.headers['webhook-id']}: ${message.events.length} events of the refresh published ${message.published_at} (feed positions ${message.from_position}-${message.to_position}), signature verified:\n${lines.join('\n')}\n    ...\n`,
      );
      tryIt(receiver.address().port);
    });
  });
  await new Promise((r) => receiver.listen(0, HOST, r));
  await removeEarlierReceivers();
  const url = `http://${HOST}:${receiver.address().port}/hooks`;
  process.stdout.write(`\n$ curl -s -X POST -H 'X-API-Key: ${PRO}' ${base}/v1/webhooks -d '{"url": "${url}"}'\n`);
  const res = await fetch(`${base}/v1/webhooks`, { method: 'POST', headers: { 'X-API-Key': PRO }, body: JSON.stringify({ url }) });
  const body = await res.json();
  if (res.status !== 201) throw new Error(`POST /v1/webhooks answered ${res.status}: ${body.error?.message}`);
  const made = body.data;
  secret = made.secret;
  say(`endpoint ${made.id} created at feed position ${made.delivered_through}; its signing secret is ${secret}`);
  build(2);
  step(['check', '--public', 'public']);
  say('the server notices the new tree within 5 s and sends the receiver its events...');
  // A push that does not come: serve's log says why.
  setTimeout(release, 30_000).unref();
}

/**
 * The endpoints of earlier demos, whose receivers ended with them: the server would go on trying them, and each run
 * would take one of the pro key's five places until a demo could subscribe no more. Removed through the API.
 */
async function removeEarlierReceivers() {
  const key = { 'X-API-Key': PRO };
  const listed = await fetch(`${base}/v1/webhooks`, { headers: key });
  if (listed.status !== 200) throw new Error(`GET /v1/webhooks answered ${listed.status}`);
  const earlier = (await listed.json()).data.endpoints.filter((e) => /^http:\/\/127\.0\.0\.1:\d+\/hooks$/.test(e.url));
  for (const e of earlier) {
    const gone = await fetch(`${base}/v1/webhooks/${e.id}`, { method: 'DELETE', headers: key });
    if (gone.status !== 204) throw new Error(`DELETE /v1/webhooks/${e.id} answered ${gone.status}`);
  }
  if (earlier.length) say(`removed ${earlier.length} endpoint(s) an earlier demo subscribed (their receivers are gone)`);
}

/** The requests to try, once the webhook has arrived. */
function tryIt(receiverPort) {
  process.stdout.write(
    `\nTry it (demo keys: fixtures/keys/README.md; the receiver stays on port ${receiverPort}):\n  curl -s -H 'X-API-Key: ${PRO}' ${base}/v1/assets/BTC/risk\n  curl -s -H 'X-API-Key: rr_demo_basic_key_not_secret' '${base}/v1/assets/BTC/history?from=2026-01-01'\n  curl -s -H 'X-API-Key: ${PRO}' '${base}/v1/changes?from=2026-10-15&limit=5'\n  curl -s -H 'X-API-Key: ${PRO}' ${base}/v1/webhooks\n  curl -s -H 'X-API-Key: rr_demo_expired_key_not_secret' ${base}/v1/assets/BTC/risk   # 401: says when the key expired\nDocs: ${base}/docs (Ctrl-C stops the server)\n\n`,
  );
  release();
}
server.on('exit', async (code, signal) => {
  release();
  // Exit 3 before listening is the machine's state: if the port was taken while the builds ran, say so as at the start.
  const busyNow = code === 3 && !listening ? await unavailable(port) : null;
  if (busyNow) portTaken(busyNow);
  process.exit(failed ? 1 : (code ?? (signal ? 0 : 1)));
});
// Ctrl-C reaches the server too (one process group): the demo ends once it has saved its counts and stopped.
process.on('SIGINT', () => {});
process.on('SIGTERM', () => server.kill('SIGTERM'));
