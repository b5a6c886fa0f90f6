/**
 * The bench's servers, each in a process of its own (server.ts), and where processes run: on a machine of two or
 * more cores the servers share the first core and wrk has the second, so a server loaded alone has a core to itself,
 * two loaded side by side share one, and their load generators never compete with them.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, truncateSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { load, loadTogether, warmTogether, type Load, type LoadOptions } from './load.js';

const here = dirname(fileURLToPath(import.meta.url));

export interface Placement {
  /** The core the servers run on, and wrk's; undefined where processes are not pinned. */
  server?: number;
  wrk?: number;
}

/** Servers on core 0 and wrk on core 1 where there are two cores and `taskset` (util-linux); else unpinned. */
export function placement(wanted: boolean): Placement {
  if (!wanted || cpus().length < 2 || spawnSync('taskset', ['-V'], { stdio: 'ignore' }).status !== 0) return {};
  return { server: 0, wrk: 1 };
}

export interface Running {
  kind: string;
  url: string;
  pid: number;
  /** The access log's file (truncated after each load, so a long bench does not fill the disk). */
  log: string;
  /** Stops it; resolves once its process has exited (nothing of it writes after). */
  stop(): Promise<void>;
}

/** Every bench server still running: stopped when the bench exits, a failed run's included. */
const started = new Set<ChildProcess>();
process.once('exit', () => {
  for (const p of started) p.kill();
});

/**
 * Starts `server.js <kind>` over a tree and a key file, its access log into `log`, with `env` added to this process's
 * environment; resolves once it listens.
 */
export function startBenchServer(
  kind: string,
  tree: string,
  keys: string,
  log: string,
  at: Placement,
  env: NodeJS.ProcessEnv = {},
): Promise<Running> {
  const args = [join(here, 'server.js'), kind, tree, keys, log];
  const [command, argv] =
    at.server === undefined ? [process.execPath, args] : ['taskset', ['-c', String(at.server), process.execPath, ...args]];
  return new Promise((resolve, reject) => {
    const p = spawn(command, argv, { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
    started.add(p);
    const exited = new Promise<void>((r) => p.once('exit', () => r()));
    p.once('exit', () => started.delete(p));
    const stop = () => {
      p.kill();
      return exited;
    };
    p.stdout.once('data', (d: Buffer) => resolve({ kind, url: d.toString().trim(), pid: p.pid!, log, stop }));
    p.once('error', reject);
    p.once('exit', (code) => reject(new Error(`bench server ${kind} exited (${code}) before it listened`)));
  });
}

export type Target = Omit<LoadOptions, 'pid' | 'seconds' | 'cpu'>;

/** One timed load of a running server, wrk placed beside it; its log file emptied afterwards. */
export function loadServer(s: Running, t: Target, seconds: number, at: Placement): Load {
  const l = load({ ...t, seconds, pid: s.pid, cpu: at.wrk });
  if (existsSync(s.log)) truncateSync(s.log, 0);
  return l;
}

/** Running servers loaded at once for the same time, each by a wrk of its own (loadTogether); their logs emptied afterwards. */
export async function loadServersTogether(loads: [Running, Target][], seconds: number, at: Placement): Promise<Load[]> {
  const ls = await loadTogether(loads.map(([s, t]) => ({ ...t, seconds, pid: s.pid, cpu: at.wrk })));
  for (const [s] of loads) if (existsSync(s.log)) truncateSync(s.log, 0);
  return ls;
}

/**
 * Running servers warmed at once, each by a wrk of its own, until each has answered `count`, measuring nothing: JIT
 * warm-up, and every rotating key seen once (warmTogether). Their logs are emptied afterwards.
 */
export async function warmServersTogether(warms: [Running, Target][], count: number, at: Placement): Promise<void> {
  await warmTogether(
    warms.map(([, t]) => ({ ...t, cpu: at.wrk })),
    count,
  );
  for (const [s] of warms) if (existsSync(s.log)) truncateSync(s.log, 0);
}
