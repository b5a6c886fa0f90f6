/**
 * One load: wrk against one URL (bench/wrk.lua) for a bounded time, with the CPU the loaded server and wrk itself
 * spent meanwhile. A server's CPU while loaded says whether the figure measures it: a server short of its share of
 * the core (all of it alone, half of it side by side) was waiting on its load generator or on the machine, and the
 * bench marks a ratio taken against such a load invalid.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The script sits beside this file's source, not in dist/. */
const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bench', 'wrk.lua');

export interface Load {
  rps: number;
  requests: number;
  /** Responses with an HTTP status of 400 or more. */
  status_errors: number;
  /** Connect, read and write errors, and timeouts. */
  errors: number;
  /** Latencies in milliseconds, to the microsecond. */
  p50: number;
  p90: number;
  p99: number;
  max: number;
  bytes_per_response: number;
  /** The loaded server's CPU over the load, as a share of one core (all its threads). */
  server_cpu: number;
  /** The server's CPU time per response, in microseconds. */
  server_us_per_request: number;
  /** wrk's CPU over the load, as a share of one core; for loads taken together (loadTogether), all their wrks'. */
  wrk_cpu: number;
}

export interface LoadOptions {
  url: string;
  /** Sent with every request. */
  headers?: Record<string, string>;
  /** Seconds. */
  seconds: number;
  connections: number;
  /** The server process to measure. */
  pid: number;
  /** Each request carries the next of these values in `header`. */
  rotation?: { header: string; file: string };
  /** The CPU wrk runs on, where the bench pins processes. */
  cpu?: number;
}

/** Whether wrk can be run here; the error says how to get it. */
export function checkWrk(): void {
  const r = spawnSync('wrk', ['-v'], { encoding: 'utf8' });
  if (r.error)
    throw new Error(
      'the bench loads its servers with wrk, which is not on PATH: install it (Debian/Ubuntu `apt-get install wrk`, macOS `brew install wrk`) and run the bench again',
    );
}

/** A rotation file as wrk.lua reads it: one value a line. */
export function writeRotation(file: string, values: string[]): string {
  writeFileSync(file, values.join('\n') + '\n');
  return file;
}

/** utime + stime of a process (all its threads), in seconds; `self` also reads the children it waited for. */
function cpuSeconds(pid: number | 'self', children = false): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  // After the command's closing parenthesis: utime and stime are fields 14 and 15 of stat(5), cutime and cstime 16, 17.
  const at = children ? 13 : 11;
  return (Number(fields[at]) + Number(fields[at + 1])) / TICKS;
}
/** USER_HZ: 100 on every Linux the kernel's ABI has, which /proc reports times in. */
const TICKS = 100;

/** The command line of wrk with the options of a load, pinned to `cpu` where given. */
function wrkCommand(o: Omit<LoadOptions, 'pid' | 'seconds'>, seconds: number, scriptArgs: string[] = []): [string, string[]] {
  const args = [
    '-t1',
    `-c${o.connections}`,
    `-d${seconds}s`,
    '--timeout',
    '10s',
    '-s',
    SCRIPT,
    ...Object.entries(o.headers ?? {}).flatMap(([k, v]) => ['-H', `${k}: ${v}`]),
    o.url,
    '--',
    ...(o.rotation ? [o.rotation.file, o.rotation.header] : []),
    ...scriptArgs,
  ];
  return o.cpu === undefined ? ['wrk', args] : ['taskset', ['-c', String(o.cpu), 'wrk', ...args]];
}

const failed = ([command, argv]: [string, string[]], why: string, output: string) =>
  new Error(`${command} ${argv.join(' ')} failed (${why}): ${output}`);

/** wrk with the options of a load; its standard output. */
function wrk(o: Omit<LoadOptions, 'pid' | 'seconds'>, seconds: number, scriptArgs: string[] = []): string {
  const c = wrkCommand(o, seconds, scriptArgs);
  const r = spawnSync(c[0], c[1], { encoding: 'utf8', maxBuffer: 1 << 20 });
  if (r.status !== 0) throw failed(c, r.error?.message ?? `status ${r.status}`, r.stderr + r.stdout);
  return r.stdout;
}

/** wrk in the background: `done` resolves with its standard output once it exits; `stop` ends it early. */
function wrkAsync(
  o: Omit<LoadOptions, 'pid' | 'seconds'>,
  seconds: number,
  scriptArgs: string[] = [],
): { done: Promise<string>; stop(): void } {
  const c = wrkCommand(o, seconds, scriptArgs);
  const p = spawn(c[0], c[1], { stdio: ['ignore', 'pipe', 'pipe'] });
  const done = new Promise<string>((resolve, reject) => {
    let [out, err] = ['', ''];
    p.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    p.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    p.once('error', (e) => reject(failed(c, e.message, err + out)));
    p.once('close', (code) => (code === 0 ? resolve(out) : reject(failed(c, `status ${code}`, err + out))));
  });
  return { done, stop: () => p.kill() };
}

/**
 * Warm-ups of several servers at once, each by a wrk of its own, until each has answered `count` (an hour at most),
 * measuring nothing: servers loaded side by side next are then warmed side by side too, and none waits idle through
 * another's warm-up.
 */
export async function warmTogether(os: Omit<LoadOptions, 'pid' | 'seconds'>[], count: number): Promise<void> {
  const wrks = os.map((o) => wrkAsync(o, 3600, [`stop=${count}`]));
  const outs = await Promise.all(wrks.map((w) => w.done)).catch((e: unknown) => {
    for (const w of wrks) w.stop();
    throw e;
  });
  os.forEach((o, i) => {
    if (!outs[i]!.includes('wrk-warm ')) throw new Error(`wrk stopped before ${count} responses from ${o.url}: ${outs[i]}`);
  });
}

/** A load's figures from wrk's output and the CPU its server (and wrk) spent meanwhile. */
function figures(o: LoadOptions, out: string, serverCpu: number, wrkCpu: number, wall: number): Load {
  const line = out.split('\n').find((l) => l.startsWith('wrk-json '));
  if (!line) throw new Error(`wrk printed no result for ${o.url}: ${out}`);
  const w = JSON.parse(line.slice('wrk-json '.length)) as Record<string, number>;
  // The server's share of a core over the load itself (wrk's duration); wrk's over its whole run, set-up included.
  const duration = w.duration_us! / 1e6;
  const ms = (us: number) => us / 1000;
  const requests = w.requests!;
  return {
    rps: requests / duration,
    requests,
    status_errors: w.non2xx!,
    errors: w.errors! + w.timeouts!,
    p50: ms(w.p50_us!),
    p90: ms(w.p90_us!),
    p99: ms(w.p99_us!),
    max: ms(w.max_us!),
    bytes_per_response: requests ? Math.round(w.bytes! / requests) : 0,
    server_cpu: serverCpu / duration,
    server_us_per_request: requests ? (serverCpu * 1e6) / requests : 0,
    wrk_cpu: wrkCpu / wall,
  };
}

export function load(o: LoadOptions): Load {
  const serverBefore = cpuSeconds(o.pid);
  const wrkBefore = cpuSeconds('self', true);
  const start = performance.now();
  const out = wrk(o, o.seconds);
  const wall = (performance.now() - start) / 1000;
  return figures(o, out, cpuSeconds(o.pid) - serverBefore, cpuSeconds('self', true) - wrkBefore, wall);
}

/**
 * Several loads at once, each server by a wrk of its own, all started together and run for the same time: servers
 * sharing one core then share whatever speed the machine has from one millisecond to the next. Each load's
 * `wrk_cpu` is that of all the wrk processes together, which share their core in turn.
 */
export async function loadTogether(os: LoadOptions[]): Promise<Load[]> {
  const before = os.map((o) => cpuSeconds(o.pid));
  const wrkBefore = cpuSeconds('self', true);
  const start = performance.now();
  const wrks = os.map((o) => wrkAsync(o, o.seconds));
  // One wrk failing ends the others: a load left running would weigh on whatever the bench does next.
  const outs = await Promise.all(wrks.map((w) => w.done)).catch((e: unknown) => {
    for (const w of wrks) w.stop();
    throw e;
  });
  const wall = (performance.now() - start) / 1000;
  const after = os.map((o) => cpuSeconds(o.pid));
  const wrkCpu = cpuSeconds('self', true) - wrkBefore;
  return os.map((o, i) => figures(o, outs[i]!, after[i]! - before[i]!, wrkCpu, wall));
}
