/**
 * A `serve` of the CLI as a process of its own, and a load on it from many keys: what the kill and stop tests of the
 * quota stores drive.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN } from '../../helpers.js';
import { freePort } from '../../services.js';

/** A `serve` of the CLI on a free port, its output gathered; resolves once it listens. */
export async function serve(args: string[]): Promise<{ child: ChildProcess; output: () => string; url: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, [BIN, 'serve', '--port', String(port), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d) => (output += String(d)));
  child.stderr!.on('data', (d) => (output += String(d)));
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on('data', () => output.includes('serving') && resolve());
    child.once('exit', (code) => reject(new Error(`serve exited ${code}: ${output}`)));
  });
  return { child, output: () => output, url: `http://127.0.0.1:${port}` };
}
export const stopped = (child: ChildProcess, signal: NodeJS.Signals) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill(signal);
  });

/** `n` ultra keys in a key file in `dir`. */
export function manyKeys(n: number, dir: string): { file: string; keys: string[] } {
  const keys = Array.from({ length: n }, (_, i) => `rr_load_${i}_${randomBytes(8).toString('hex')}`);
  const file = join(dir, `keys-${randomBytes(3).toString('hex')}.json`);
  const entry = (k: string, i: number) => ({ sha256: createHash('sha256').update(k).digest('hex'), plan: 'ultra', label: `load ${i}` });
  writeFileSync(file, JSON.stringify({ keys: keys.map(entry) }));
  return { file, keys };
}

/**
 * Requests from `connections` loops, each key in turn, at most `perSecond` of them a second in all, until `stop()`;
 * each answer's status and when it came. The server answers 200 for a request it counted and 429 for one it refused.
 * Paced, not flat out: a steady load is what these tests need (requests in flight at every moment, a save's worth of
 * charges every second), and one that took every cycle of the machine would slow every other test running beside.
 */
export function load(url: string, keys: string[], { connections = 8, perSecond = 500 } = {}) {
  const admitted: number[] = [];
  let running = true;
  let next = 0;
  // Each loop starts a request at most once per `every` ms.
  const every = (connections * 1_000) / perSecond;
  const loops = Array.from({ length: connections }, async () => {
    while (running) {
      const key = keys[next++ % keys.length]!;
      const started = Date.now();
      try {
        const r = await fetch(`${url}/v1/assets/BTC/risk`, { headers: { 'X-API-Key': key } });
        await r.arrayBuffer();
        if (r.status === 200) admitted.push(Date.now());
      } catch {
        return; // the server went away
      }
      const wait = started + every - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
  });
  return {
    admitted,
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
  };
}
