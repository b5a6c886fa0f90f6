/**
 * `npm run demo` and its port (PORT, default 8787): a port it cannot listen on is found before anything is built or
 * deleted, and the demo says which port, why, and what to do, exit 3 as `serve` does; a PORT that is no port is
 * exit 2. (The demo's builds and server are the CLI's, tested on their own.)
 */
import { spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers.js';

const DEMO = join(ROOT, 'scripts', 'demo.js');
const demo = (env: Record<string, string | undefined>) =>
  spawnSync(process.execPath, [DEMO], { encoding: 'utf8', cwd: ROOT, env: { ...process.env, ...env }, timeout: 30_000 });

let holder: Server;
let taken = 0;
beforeAll(async () => {
  holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', () => resolve()));
  taken = (holder.address() as { port: number }).port;
});
afterAll(() => new Promise<void>((r) => holder.close(() => r())));

describe('the demo and its port', () => {
  it('a port another program holds: named, with what to do, exit 3, before anything is built', () => {
    const r = demo({ PORT: String(taken) });
    expect(r.status).toBe(3);
    expect(r.stderr).toBe(
      `demo: port ${taken} on 127.0.0.1 is already in use (an earlier demo still running?). Stop what holds it, or run the demo on another port: PORT=8788 npm run demo\n`,
    );
    // Nothing ran: no step was printed.
    expect(r.stdout).toBe('');
  });

  it('a PORT that is no port is exit 2, saying what it takes', () => {
    for (const port of ['abc', '0', '70000', '80 80']) {
      const r = demo({ PORT: port });
      expect([r.status, r.stdout], port).toEqual([2, '']);
      expect(r.stderr, port).toBe(`demo: PORT=${port} is no port: give one from 1 to 65535, such as PORT=8788 npm run demo\n`);
    }
  });
});
