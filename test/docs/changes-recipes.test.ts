/** The daily job of docs/changes.md, run as written (decision 99) against a running server. */
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers.js';
import { freePort } from '../services.js';
import { builtTree, KEY } from '../auth-shim/tree.js';
import { block } from './blocks.js';

const port = await freePort();
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
  ],
  { stdio: ['ignore', 'ignore', 'pipe'] },
);
await new Promise<void>((resolve, reject) => {
  server.stderr.on('data', (d) => String(d).includes('serving') && resolve());
  server.once('exit', (code) => reject(new Error(`serve exited ${code}`)));
});
afterAll(() => void server.kill('SIGTERM'));

describe("the change feed's daily job", () => {
  it("prints yesterday's events as tab-separated lines", () => {
    // The shared tree's second refresh was published on 2026-10-15: that is the job's "yesterday" here.
    const script = block('changes.md', 'sh', 'v1/changes?from=$day')
      .replace('$(date -u -d yesterday +%F)', '2026-10-15')
      .replace('https://api.example.com', `http://127.0.0.1:${port}`);
    const r = spawnSync('bash', ['-o', 'pipefail', '-c', script], { encoding: 'utf8', env: { ...process.env, KEY: KEY.pro } });
    expect(r.status, r.stderr).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(line).toMatch(/^2026-10-15T[\d:.]+Z\t\S+\t\S+\t[^\t]*\t[^\t]*$/);
  });
});
