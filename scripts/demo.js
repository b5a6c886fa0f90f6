#!/usr/bin/env node
// `npm run demo`: synthesize the fixture site, build it into public/, and serve it on localhost.
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
step(['build', '--pages', '.demo/site', '--out', 'public', '--now', '2026-10-14T00:30:00Z']);
step(['check', '--out', 'public']);
const port = process.env.PORT ?? '8788';
process.stdout.write(`\n$ risk-readings preview --public public --port ${port}\n`);
process.stdout.write(`try: curl -s http://127.0.0.1:${port}/v1/assets/BTC/risk.json\n`);
spawn(process.execPath, [cli, 'preview', '--public', 'public', '--port', port], { stdio: 'inherit', cwd: root });
