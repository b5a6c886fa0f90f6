#!/usr/bin/env node
// `npm run demo`: synthesize the fixture site, build it into public/, check it, and serve it through the shim.
import { spawnSync, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const root = fileURLToPath(new URL('..', import.meta.url));
const cli = join(root, 'bin', 'risk-readings.js');
const step = (args) => {
  process.stdout.write(`\n$ risk-readings ${args.join(' ')}\n`);
  const r = spawnSync(process.execPath, [cli, ...args], { stdio: 'inherit', cwd: root });
  if (r.status !== 0) process.exit(r.status ?? 1);
};

step(['fixtures', '--out', '.demo/site', '--day', '1']);
step(['build', '--pages', '.demo/site', '--out', 'public', '--init', '--now', '2026-10-14T00:30:00Z']);
step(['check', '--public', 'public']);
const port = process.env.PORT ?? '8787';
const args = ['serve', '--public', 'public', '--keys', 'fixtures/keys/example-keys.json', '--port', port];
process.stdout.write(`\n$ risk-readings ${args.join(' ')}\n`);
process.stdout.write(
  `\nTry it (demo keys: fixtures/keys/README.md):\n  curl -s -H 'X-API-Key: rr_demo_pro_key_not_secret' http://127.0.0.1:${port}/v1/assets/BTC/risk\n  curl -s -H 'X-API-Key: rr_demo_basic_key_not_secret' 'http://127.0.0.1:${port}/v1/assets/BTC/history?from=2026-01-01'\n\n`,
);
spawn(process.execPath, [cli, ...args], { stdio: 'inherit', cwd: root });
