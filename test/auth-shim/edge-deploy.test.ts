/**
 * Deploying the edge as an operator does, offline: wrangler bundles the worker from wrangler.toml (`wrangler deploy
 * --dry-run`, what `npm run edge:build` runs), the bundle carries the API path only, the config names its secrets
 * without a value, and `npm run edge:keys` pushes a key file to the KV namespace the worker reads (here a local
 * one, `--local --persist-to DIR`), refusing a file the edge could not read. The edge commands run wrangler quietly
 * (no banner with its update check, no metrics, no experimental-field warning), take relative paths from where npm
 * was run, and say what to do in a clone installed without devDependencies.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DOCS_FILES } from '../../auth-shim/docs.js';
import { ROOT, readJson, tempDir } from '../helpers.js';
import { bundleWorker, startEdge, WRANGLER_CONFIG, WRANGLER_ENV, type Edge } from './edge-setup.js';
import { KEY, KEYS_FILE, builtTree } from './tree.js';

const root = tempDir('rr-edge-deploy-');
const edges: Edge[] = [];
afterAll(() => Promise.all(edges.map((e) => e.close())));

/** `npm run edge:keys -- ...args`, as an operator runs it (the script itself, without npm's banner). */
const pushKeys = (...args: string[]) =>
  spawnSync(process.execPath, [join(ROOT, 'scripts', 'edge-keys.js'), ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, ...WRANGLER_ENV },
  });

/**
 * The environment of an operator new to wrangler, as npm hands it to a script run from `dir`: no WRANGLER_* switch
 * of their own, a home wrangler has never written to, the repository as the working directory and INIT_CWD the
 * directory npm was run in.
 */
function operatorEnv(dir: string): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('WRANGLER_')));
  const home = join(dir, 'home');
  mkdirSync(home, { recursive: true });
  return { ...env, HOME: home, XDG_CONFIG_HOME: join(home, '.config'), INIT_CWD: dir };
}

/** What wrangler says to every run that the edge commands keep from the operator. */
const NOISE = [/⛅️ wrangler/, /update available/, /experimental/, /telemetry/];

/** Whether wrangler recorded consent to send usage metrics under `home` (what later runs send by, with a notice). */
const metricsConsent = (home: string) => {
  const file = join(home, '.config', '.wrangler', 'metrics.json');
  return existsSync(file) && readJson(file).permission !== undefined;
};

describe('the edge as wrangler deploys it', () => {
  it("bundles the API path only, well under 200 KB minified; Swagger UI's files are the deployment's assets", () => {
    const bundle = bundleWorker(undefined, join(root, 'worker'));
    const text = readFileSync(bundle, 'utf8');
    expect(statSync(bundle).size).toBeLessThan(200 * 1024);
    expect(text.includes('QuotaCounter')).toBe(true);
    const pkg = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
    for (const name of Object.keys(DOCS_FILES)) {
      const bytes = readFileSync(join(pkg, name));
      // Not inlined (a stretch from the middle of each text file is not in the bundle), but deployed beside it.
      if (!name.endsWith('.png'))
        expect(text.includes(bytes.subarray(bytes.length >> 1, (bytes.length >> 1) + 64).toString()), name).toBe(false);
      expect(readFileSync(join(ROOT, 'dist-edge', 'assets', 'docs', name)).equals(bytes), name).toBe(true);
    }
  });

  it('names its secrets without a value, and binds the origin, the key store, the quotas and the assets', () => {
    const config = readFileSync(WRANGLER_CONFIG, 'utf8');
    expect(config).toMatch(/^\[secrets\]\nrequired = \["ORIGIN_TOKEN"\]$/m);
    for (const secret of ['ORIGIN_TOKEN', 'MARKETPLACE_SECRET']) expect(config).not.toMatch(new RegExp(`^\\s*${secret}\\s*=`, 'm'));
    expect(config).toMatch(/^ORIGIN_URL = "/m);
    expect(config).toMatch(/^\[\[kv_namespaces\]\]\nbinding = "KEYS"$/m);
    expect(config).toMatch(/^\[\[durable_objects\.bindings\]\]\nname = "QUOTAS"\nclass_name = "QuotaCounter"$/m);
    // The directory billing reads (decision 98), a class of its own added by a migration of its own; its route's
    // secret is optional (without it the route does not exist), so never required and never given a value here.
    expect(config).toMatch(/^\[\[durable_objects\.bindings\]\]\nname = "QUOTA_DIRECTORY"\nclass_name = "QuotaDirectory"$/m);
    expect(config).toMatch(/^\[\[migrations\]\]\ntag = "v2"\nnew_sqlite_classes = \["QuotaDirectory"\]$/m);
    expect(config).not.toMatch(/^\s*OPERATOR_TOKEN\s*=/m);
    expect(config).toMatch(/^\[assets\]\ndirectory = "dist-edge\/assets"\nbinding = "ASSETS"\nrun_worker_first = true$/m);
  });

  it('edge:keys pushes a key file to the KV namespace the worker reads; a file the edge could not read is refused', async () => {
    const persist = join(root, 'kv');
    const pushed = pushKeys(KEYS_FILE, '--local', '--persist-to', persist);
    expect(pushed.status, pushed.stderr).toBe(0);
    const count = JSON.parse(readFileSync(KEYS_FILE, 'utf8')).keys.length;
    expect(pushed.stderr).toMatch(new RegExp(`edge:keys: ${count} key\\(s\\) from .*example-keys\\.json are keys\\.json in KV`));

    const broken = join(root, 'broken-keys.json');
    writeFileSync(broken, JSON.stringify({ keys: [{ sha256: 'abc', plan: 'pro' }] }));
    const refused = pushKeys(broken, '--local', '--persist-to', persist);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toBe(`edge:keys: ${broken}: keys[0].sha256: expected 64 lower-case hex digits\n`);
    writeFileSync(broken, '{"keys": [');
    expect(pushKeys(broken, '--local', '--persist-to', persist).stderr).toMatch(/^edge:keys: .*broken-keys\.json: not JSON/);
    expect(pushKeys('--local').status).toBe(2);

    // The worker reads what was pushed, and only that: the refused files never reached the namespace.
    const edge = await startEdge({ out: builtTree(), persistTo: persist });
    edges.push(edge);
    const res = await edge.call('/v1/assets/BTC/risk', { headers: { 'X-API-Key': KEY.pro } });
    expect(res.status).toBe(200);
    expect((await edge.call('/v1/assets/BTC/risk', { headers: { 'X-API-Key': 'rr_not_a_key' } })).status).toBe(401);
  });

  it("edge:build's wrangler step runs quietly: no banner or update check, no metrics, no experimental warning", () => {
    const dir = join(root, 'quiet-build');
    const env = operatorEnv(dir);
    // The script as package.json has it, after its compile step (which the suite has done), into a folder of its own.
    const script = readJson(join(ROOT, 'package.json')).scripts['edge:build'] as string;
    const step = script.split(' && ').at(-1)!;
    expect(step).toMatch(/--outdir dist-edge\/worker$/);
    const r = spawnSync('sh', ['-c', step.replace(/dist-edge\/worker$/, join(dir, 'worker'))], { cwd: ROOT, encoding: 'utf8', env });
    expect(r.status, r.stderr).toBe(0);
    expect(statSync(join(dir, 'worker', 'edge.js')).size).toBeGreaterThan(0);
    for (const noise of NOISE) expect(`${r.stdout}${r.stderr}`).not.toMatch(noise);
    expect(metricsConsent(env.HOME!)).toBe(false);
    // The required secret stays declared: the deploy still refuses to run without it.
    expect(readFileSync(WRANGLER_CONFIG, 'utf8')).toMatch(/^\[secrets\]\nrequired = \["ORIGIN_TOKEN"\]$/m);
  });

  it('edge:keys takes FILE and --persist-to from where npm was run, and runs wrangler quietly', () => {
    const dir = join(root, 'caller');
    mkdirSync(dir, { recursive: true });
    copyFileSync(KEYS_FILE, join(dir, 'my-keys.json'));
    const env = operatorEnv(dir);
    const count = JSON.parse(readFileSync(KEYS_FILE, 'utf8')).keys.length;
    for (const persist of [['--persist-to', 'kv'], ['--persist-to=kv2']]) {
      // npm runs the script from the repository's root, with INIT_CWD the caller's directory.
      const r = spawnSync(process.execPath, [join(ROOT, 'scripts', 'edge-keys.js'), 'my-keys.json', '--local', ...persist], {
        cwd: ROOT,
        encoding: 'utf8',
        env,
      });
      expect(r.status, r.stderr).toBe(0);
      expect(r.stderr).toContain(`edge:keys: ${count} key(s) from ${join(dir, 'my-keys.json')} are keys.json in KV`);
      const kv = join(dir, persist.at(-1)!.replace('--persist-to=', ''));
      expect(existsSync(join(kv, 'v3', 'kv')), kv).toBe(true);
      expect(existsSync(join(ROOT, persist.at(-1)!.replace('--persist-to=', '')))).toBe(false);
      for (const noise of NOISE) expect(`${r.stdout}${r.stderr}`).not.toMatch(noise);
    }
    expect(metricsConsent(env.HOME!)).toBe(false);
    // A file the caller does not have is named where the caller looked, not at the root.
    const missing = spawnSync(process.execPath, [join(ROOT, 'scripts', 'edge-keys.js'), 'package.json', '--local'], {
      cwd: ROOT,
      encoding: 'utf8',
      env,
    });
    expect(missing.status).toBe(1);
    expect(missing.stderr).toBe(`edge:keys: ${join(dir, 'package.json')}: cannot read it (ENOENT)\n`);
  });

  it('in a clone installed without devDependencies, an edge command says wrangler is missing and why, exit 1', () => {
    // The script in a repository of its own whose node_modules has no wrangler (as `npm ci --omit=dev` leaves it).
    const clone = join(root, 'omit-dev');
    mkdirSync(join(clone, 'scripts'), { recursive: true });
    writeFileSync(join(clone, 'package.json'), '{"type": "module"}');
    copyFileSync(join(ROOT, 'scripts', 'edge-wrangler.js'), join(clone, 'scripts', 'edge-wrangler.js'));
    const r = spawnSync(process.execPath, [join(clone, 'scripts', 'edge-wrangler.js'), 'deploy', '--dry-run'], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(
      /^edge: wrangler is not installed in .*omit-dev\/: it is a devDependency, which `npm ci --omit=dev` leaves out/,
    );
    expect(r.stderr).toContain('plain `npm ci`');
  });
});
