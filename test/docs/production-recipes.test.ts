/**
 * The operator's recipes of docs/production.md, run as written (decision 99): the systemd unit, the health probe and
 * the tree's swap on a serving host. Each block is read from the document itself, so a recipe edited there is the
 * recipe tested; only the host's paths are pointed at this test's own.
 */
import { execFile, execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildSmall, ROOT, smallSite, tempDir } from '../helpers.js';
import { freePort, redisAway, REDIS_URL, removesAddedKeys } from '../services.js';
import { builtTree, copiedTree, KEYS_FILE } from '../auth-shim/tree.js';
import { stopped } from '../auth-shim/node/serve-load.js';
import { block as docBlock } from './blocks.js';

const block = (lang: string, marker: string) => docBlock('production.md', lang, marker);

const root = tempDir('rr-recipes-');
const children: ChildProcess[] = [];
// Each serve stopped and gone before the folder goes (after hooks run last first): a stop still saving its counts
// into a tree being removed failed the removal.
afterAll(() => Promise.all(children.map((c) => stopped(c, 'SIGTERM'))));

/** Runs `args` (a serve) until it prints that it serves; resolves with its output so far. */
function started(argv: string[], env: NodeJS.ProcessEnv, cwd = ROOT): Promise<{ child: ChildProcess; output: () => string }> {
  const child = spawn(argv[0]!, argv.slice(1), { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let output = '';
  child.stdout!.on('data', (d) => (output += String(d)));
  child.stderr!.on('data', (d) => (output += String(d)));
  return new Promise((resolve, reject) => {
    child.stderr!.on('data', () => output.includes('serving') && resolve({ child, output: () => output }));
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${output}`)));
  });
}

const noSystemd = spawnSync('systemd-analyze', ['--version']).status === 0 ? null : 'systemd-analyze is not installed';
if (noSystemd && process.env.CI === 'true')
  throw new Error(`CI=true and ${noSystemd} (apt-get install systemd): the unit cannot be verified`);
const noRedis = await redisAway('the systemd unit recipe');

describe.skipIf(noSystemd !== null || noRedis !== null)(`the systemd unit (skipped: ${noSystemd ?? noRedis ?? 'no'})`, () => {
  it('passes systemd-analyze verify, and its EnvironmentFile reaches serve: RISK_READINGS_QUOTAS picks the Redis', async () => {
    const [port, metrics] = [await freePort(), await freePort()];
    await removesAddedKeys(REDIS_URL); // what serve writes under its default prefix on the shared Redis
    const dir = join(root, 'unit');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'marketplace-secret'), 'not-a-real-secret\n');
    // The host's paths, pointed at this test's: the unit's own lines are kept as they are.
    const unit = block('ini', '[Service]')
      .replaceAll('/etc/risk-readings/env', join(dir, 'env'))
      .replaceAll('/etc/risk-readings/keys.json', KEYS_FILE)
      .replaceAll('/etc/risk-readings/marketplace-secret', join(dir, 'marketplace-secret'))
      .replaceAll('/srv/risk-readings', builtTree())
      .replaceAll('/opt/risk-readings', ROOT)
      .replaceAll('/usr/local/bin/node', process.execPath)
      .replaceAll('--port 8787', `--port ${port}`)
      .replaceAll('--metrics-port 9464', `--metrics-port ${metrics}`)
      .replace(/^User=.*$/m, 'User=root');
    const file = join(dir, 'risk-readings.service');
    writeFileSync(file, unit);
    const verified = spawnSync('systemd-analyze', ['verify', file], { encoding: 'utf8' });
    expect(verified.status, verified.stderr).toBe(0);
    expect(verified.stderr).not.toMatch(/risk-readings\.service/);
    // What systemd does with the unit's two lines: EnvironmentFile= is a path to the end of the line (a leading `-`
    // skips a file that is not there), and ExecStart= a command line continued by backslashes.
    const path = /^EnvironmentFile=-?(.*)$/m.exec(unit)![1]!;
    writeFileSync(join(dir, 'env'), `RISK_READINGS_QUOTAS=${REDIS_URL}\n`);
    let env: Record<string, string> = {};
    try {
      env = Object.fromEntries(
        readFileSync(path, 'utf8')
          .split('\n')
          .filter((l) => /^[A-Z_]+=/.test(l))
          .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
      );
    } catch {
      // the `-`: a path that is not there is skipped without a word, as systemd does
    }
    const exec = /^ExecStart=((?:.*\\\n)*.*)$/m.exec(unit)![1]!.replace(/\\\n/g, ' ').trim().split(/\s+/);
    const cwd = /^WorkingDirectory=(.*)$/m.exec(unit)![1]!;
    const serve = await started(exec, { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', ...env }, cwd);
    expect(serve.output()).toContain(`quotas in ${REDIS_URL}`);
    expect((await fetch(`http://127.0.0.1:${port}/v1/health`)).status).toBe(200);
    const exited = new Promise((r) => serve.child.once('exit', r));
    serve.child.kill('SIGTERM');
    await exited;
  });
});

describe('the health probe', () => {
  const probe = block('sh', 'curl -fsS');
  /** The probe as a monitor runs it (`bash -o pipefail -c`, as the document says), against `port`. */
  const run = (port: number) =>
    spawnSync('bash', ['-o', 'pipefail', '-c', probe.replace(':8787', `:${port}`)], { encoding: 'utf8' }).status;

  it('passes on a server whose tree is fresh, fails on a stale one and where nothing listens', async () => {
    const [fresh, stale, none] = [await freePort(), await freePort(), await freePort()];
    const cli = [process.execPath, join(ROOT, 'bin', 'risk-readings.js'), 'serve', '--public', builtTree(), '--quotas', 'memory'];
    await started([...cli, '--port', String(fresh), '--stale-after', '100000h'], process.env);
    await started([...cli, '--port', String(stale), '--stale-after', '1h'], process.env);
    expect(run(fresh)).toBe(0);
    expect(run(stale)).not.toBe(0);
    expect(run(none)).not.toBe(0);
  });
});

describe('publishing a tree to a serving host', () => {
  it('the copy and the link swap: under load, no request fails and no reader sees a tree half copied', async () => {
    const recipe = block('sh', 'rsync -a --mkpath public/v1/');
    // Two different trees to publish in turn: the shared one, and one more day built on a copy of it.
    const other = copiedTree(join(root, 'other'));
    const pages = join(root, 'day4');
    await smallSite(pages, 4);
    await buildSmall(pages, other, { now: '2026-10-17T00:30:00Z' });
    const sources = [builtTree(), other];
    const dest = join(root, 'srv');
    mkdirSync(dest, { recursive: true });
    // `ssh HOST CMD` on this host: rsync runs its far side through it too.
    const bin = join(root, 'bin');
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(bin, 'ssh'), '#!/bin/sh\nshift\nexec sh -c "$*"\n');
    chmodSync(join(bin, 'ssh'), 0o755);
    // Run as a child the test does not wait on, so that the readers below read while it copies and swaps.
    const publish = (source: string) =>
      promisify(execFile)('bash', ['-euo', 'pipefail', '-c', recipe.replace(/^DEST=\S+ HOST=\S+/m, `DEST='${dest}' HOST=localhost`)], {
        cwd: source.replace(/\/public$/, ''),
        env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
      });
    await publish(sources[0]!);
    const port = await freePort();
    await started(
      [
        process.execPath,
        join(ROOT, 'bin', 'risk-readings.js'),
        'serve',
        '--public',
        dest,
        '--keys',
        KEYS_FILE,
        '--port',
        String(port),
        '--log-level',
        'silent',
      ],
      process.env,
    );
    let running = true;
    const failures: string[] = [];
    let requests = 0;
    let reads = 0;
    const http = (async () => {
      while (running)
        for (const path of ['/v1/health', '/v1/openapi.json']) {
          const r = await fetch(`http://127.0.0.1:${port}${path}`);
          await r.arrayBuffer();
          requests++;
          if (r.status !== 200) failures.push(`${path}: ${r.status}`);
        }
    })();
    // A reader as the server is one: resolve the link once, then read the manifest and its files from that tree.
    const files = (async () => {
      while (running) {
        try {
          const tree = realpathSync(join(dest, 'v1'));
          const manifest = JSON.parse(readFileSync(join(tree, '_manifest.json'), 'utf8')) as { files: Record<string, { sha256: string }> };
          for (const [name, f] of Object.entries(manifest.files)) {
            const sha = createHash('sha256')
              .update(readFileSync(join(tree, name)))
              .digest('hex');
            if (sha !== f.sha256) failures.push(`${name} in ${tree}: not the manifest's`);
          }
          reads++;
        } catch (e) {
          failures.push((e as Error).message);
        }
        await new Promise((r) => setImmediate(r));
      }
    })();
    for (let i = 1; i <= 6; i++) await publish(sources[i % 2]!);
    running = false;
    await Promise.all([http, files]);
    expect(failures).toEqual([]);
    expect(requests).toBeGreaterThan(0);
    expect(reads).toBeGreaterThan(0);
    // The new tree and the one before it are kept; older ones are gone.
    expect(
      execFileSync('ls', ['-1', join(dest, '.trees')], { encoding: 'utf8' })
        .trim()
        .split('\n'),
    ).toHaveLength(2);
  });
});
