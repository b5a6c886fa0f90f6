/**
 * A rolling restart on one port (`serve --reuse-port`), under load: a new server starts beside the running one on
 * the same port and quota database; the old one gets SIGTERM, stops accepting, answers what is in flight, saves its
 * counts and lets go of the file; the new one, which held the requests it received meanwhile, opens the file and
 * answers them. Clients on kept-alive connections and clients opening a connection per request see no connection
 * refused or reset and no request unanswered, and the month's count carries every request either server admitted.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PLAN_LIMITS } from '../../generator/contract/plans.js';
import { BIN, cliAsync, tempDir, until } from '../helpers.js';
import { freePort } from '../services.js';
import { KEY, KEYS_FILE, builtTree } from './tree.js';

const root = tempDir('rr-rolling-');
const children: ChildProcess[] = [];
afterAll(() => children.forEach((c) => c.exitCode === null && c.kill('SIGKILL')));

interface Serve {
  child: ChildProcess;
  stderr: () => string;
  /** Access-log lines written so far: the requests this server answered. */
  answered: () => number;
  exited: Promise<number | null>;
}

/** `serve --reuse-port` on `port` and `quotas`, with `extra` options. */
const serve = (port: number, quotas: string, ...extra: string[]) => spawnServe(port, quotas, '--reuse-port', ...extra);

function spawnServe(port: number, quotas: string, ...extra: string[]): Serve {
  const child = spawn(
    process.execPath,
    [BIN, 'serve', '--public', builtTree(), '--keys', KEYS_FILE, '--quotas', quotas, '--port', String(port), ...extra],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  children.push(child);
  let stderr = '';
  let answered = 0;
  child.stderr!.on('data', (d) => (stderr += d));
  child.stdout!.on('data', (d) => (answered += String(d).split('"msg":"request"').length - 1));
  return { child, stderr: () => stderr, answered: () => answered, exited: new Promise((r) => child.once('exit', (code) => r(code))) };
}

interface Outcome {
  status?: number;
  error?: string;
  monthRemaining?: number;
}

/** One GET of a counted route, its whole body read. */
function get(port: number, agent: Agent | false): Promise<Outcome> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/v1/assets/BTC/risk', agent, headers: { 'X-API-Key': KEY.ultra } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, monthRemaining: Number(res.headers['x-ratelimit-requests-remaining']) }));
      res.on('error', (e: NodeJS.ErrnoException) => resolve({ error: e.code ?? e.message }));
    });
    req.on('error', (e: NodeJS.ErrnoException) => resolve({ error: e.code ?? e.message }));
    req.end();
  });
}

describe('serve --reuse-port: a rolling restart on one port', () => {
  it('refuses no connection and drops no request under load, and the count carries on', async () => {
    const port = await freePort();
    const quotas = join(root, 'quotas.sqlite');
    const ready = (s: Serve, line: string) => until(() => s.stderr().includes(line) || s.child.exitCode !== null, 60_000, 50);

    const old = serve(port, quotas);
    expect(await ready(old, 'serving'), old.stderr()).toBe(true);

    // The load: four clients on kept-alive connections (as a load balancer or wrk keeps them), two opening a new
    // connection per request; each sends its next request as soon as the last is answered.
    const outcomes: Outcome[] = [];
    let running = true;
    const worker = async (agent: Agent | false) => {
      while (running) outcomes.push(await get(port, agent));
      if (agent) agent.destroy();
    };
    const workers = [
      ...Array.from({ length: 4 }, () => worker(new Agent({ keepAlive: true, maxSockets: 1 }))),
      ...Array.from({ length: 2 }, () => worker(false)),
    ];
    const answeredSoFar = () => outcomes.filter((o) => o.status).length;
    expect(await until(() => answeredSoFar() >= 200, 60_000, 20)).toBe(true);

    // It waits for the quota file longer than the old one can take to let go of it, however busy the machine.
    const next = serve(port, quotas, '--quotas-wait', '2m');
    expect(await ready(next, 'listening at'), next.stderr()).toBe(true);
    // Both share the port now; the kernel hands the new one some connections, which it holds.
    const before = answeredSoFar();
    expect(await until(() => answeredSoFar() >= before + 50, 60_000, 20)).toBe(true);
    old.child.kill('SIGTERM');
    expect(await old.exited, old.stderr()).toBe(0);
    expect(await ready(next, 'serving'), next.stderr()).toBe(true);
    const handedOver = answeredSoFar();
    expect(await until(() => answeredSoFar() >= handedOver + 200, 60_000, 20)).toBe(true);
    running = false;
    await Promise.all(workers);

    const failed = outcomes.filter((o) => o.error || (o.status !== 200 && o.status !== 429));
    expect(failed, `${failed.length} of ${outcomes.length} requests failed`).toEqual([]);
    // The month's count is every request admitted by either server (a 429 counts toward neither window).
    const last = await get(port, false);
    const admitted = outcomes.filter((o) => o.status === 200).length + (last.status === 200 ? 1 : 0);
    expect(last.monthRemaining).toBe(PLAN_LIMITS.ultra.perMonth - admitted);
    next.child.kill('SIGTERM');
    expect(await next.exited).toBe(0);
    // Both servers answered under the load, and every answer is in one of their access logs.
    expect(old.answered()).toBeGreaterThan(0);
    expect(next.answered()).toBeGreaterThan(0);
    expect(old.answered() + next.answered()).toBe(outcomes.length + 1);
  });

  it('a second serve started by mistake (no --reuse-port) on the same port and quota file exits 3 at once, naming the port', async () => {
    const port = await freePort();
    const quotas = join(root, 'mistake.sqlite');
    for (const reusePort of [false, true]) {
      // The running one with or without --reuse-port: the second, without it, cannot share the port either way.
      const running = reusePort ? serve(port, quotas) : spawnServe(port, quotas);
      expect(await until(() => running.stderr().includes('serving'), 60_000, 50), running.stderr()).toBe(true);
      const start = performance.now();
      // --quotas-wait left at its 30 s: the port is said at once, not the quota file after the wait.
      const second = await cliAsync(['serve', '--public', builtTree(), '--keys', KEYS_FILE, '--quotas', quotas, '--port', String(port)]);
      expect([second.status, second.stderr], `running with --reuse-port: ${reusePort}`).toEqual([
        3,
        `risk-readings serve: --port ${port} on 127.0.0.1: already in use\n`,
      ]);
      expect(performance.now() - start).toBeLessThan(15_000);
      // The running one never noticed.
      expect((await get(port, false)).status).toBeLessThan(500);
      running.child.kill('SIGTERM');
      expect(await running.exited).toBe(0);
    }
  });

  it('a new server the old one never makes way for answers what it held 503 and exits 3; the old one serves on', async () => {
    const port = await freePort();
    const quotas = join(root, 'held.sqlite');
    const old = serve(port, quotas);
    expect(await until(() => old.stderr().includes('serving'), 60_000, 50), old.stderr()).toBe(true);
    // Connections a request at a time, from before the new one listens to after it gives up: the kernel gives it
    // some while it waits, which it holds. Its wait (begun as it starts) is long enough for some on a busy machine.
    const outcomes: Outcome[] = [];
    let running = true;
    const worker = async () => {
      while (running) outcomes.push(await get(port, false));
    };
    const workers = [worker(), worker()];
    const stuck = serve(port, quotas, '--quotas-wait', '10s');
    expect(await until(() => stuck.stderr().includes('listening at'), 60_000, 50), stuck.stderr()).toBe(true);
    expect(await stuck.exited).toBe(3);
    running = false;
    await Promise.all(workers);
    expect(stuck.stderr()).toMatch(/risk-readings serve: .*held\.sqlite\.lock: another process counts in this quota database \(pid \d+/);
    expect(outcomes.filter((o) => o.error)).toEqual([]);
    expect(outcomes.filter((o) => ![200, 429, 503].includes(o.status!))).toEqual([]);
    expect(outcomes.filter((o) => o.status === 503).length, 'requests the stuck server held').toBeGreaterThan(0);
    // The old one never stopped serving.
    expect((await get(port, false)).status).toBeLessThan(500);
    old.child.kill('SIGTERM');
    expect(await old.exited).toBe(0);
  });
});
