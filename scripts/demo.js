#!/usr/bin/env node
// `npm run demo`: synthesize the fixture site on two publication days, build them into public/ one after the other
// (the second refresh continues the first's history and raises the change feed's events), check the tree, and
// serve it through the shim.
import { spawnSync, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const root = fileURLToPath(new URL('..', import.meta.url));
const cli = join(root, 'bin', 'risk-readings.js');
const step = (args) => {
  process.stdout.write(`\n$ risk-readings ${args.join(' ')}\n`);
  const r = spawnSync(process.execPath, [cli, ...args], { stdio: 'inherit', cwd: root });
  if (r.status !== 0) process.exit(r.status ?? 1);
};

// The demo's tree starts over each run: a day-1 build over an earlier run's day-2 tree would go back in time.
for (const generated of ['v1', '.trees', '.risk-readings-cache.json'])
  rmSync(join(root, 'public', generated), { recursive: true, force: true });
for (const day of [1, 2]) {
  step(['fixtures', '--out', `.demo/site${day}`, '--day', String(day)]);
  const init = day === 1 ? ['--init'] : [];
  step(['build', '--pages', `.demo/site${day}`, '--out', 'public', ...init, '--now', `2026-10-${13 + day}T00:30:00Z`]);
}
step(['check', '--public', 'public']);
const port = process.env.PORT ?? '8787';
const args = ['serve', '--public', 'public', '--keys', 'fixtures/keys/example-keys.json', '--port', port];
process.stdout.write(`\n$ risk-readings ${args.join(' ')}\n`);
process.stdout.write(
  `\nTry it (demo keys: fixtures/keys/README.md):\n  curl -s -H 'X-API-Key: rr_demo_pro_key_not_secret' http://127.0.0.1:${port}/v1/assets/BTC/risk\n  curl -s -H 'X-API-Key: rr_demo_basic_key_not_secret' 'http://127.0.0.1:${port}/v1/assets/BTC/history?from=2026-01-01'\n  curl -s -H 'X-API-Key: rr_demo_pro_key_not_secret' 'http://127.0.0.1:${port}/v1/changes?from=2026-10-15&limit=5'\n\n`,
);
spawn(process.execPath, [cli, ...args], { stdio: 'inherit', cwd: root });
