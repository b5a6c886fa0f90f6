/**
 * The edge's recipes of docs/edge.md, run as written where they can run here (decision 99): the private origin's
 * nginx block before the worker under workerd, and the routes `wrangler.toml` takes for a host name of one's own.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT, tempDir, until } from '../helpers.js';
import { freePort } from '../services.js';
import { bundleWorker, ORIGIN_TOKEN, startEdge, WRANGLER_CONFIG, type Edge } from '../auth-shim/edge-setup.js';
import { builtTree, KEY, KEYS_FILE } from '../auth-shim/tree.js';
import { block } from './blocks.js';

const NGINX = '/usr/sbin/nginx';
const noNginx = spawnSync(NGINX, ['-v']).status === 0 ? null : `${NGINX} is not installed`;
if (noNginx && process.env.CI === 'true')
  throw new Error(`CI=true and ${noNginx} (apt-get install nginx-light): the origin recipe cannot run`);

const root = tempDir('rr-edge-recipes-');
let nginx: ChildProcess | undefined;
let edge: Edge | undefined;
afterAll(async () => {
  nginx?.kill('SIGTERM');
  await edge?.close();
});

describe.skipIf(noNginx !== null)(`the private origin's nginx block (skipped: ${noNginx ?? 'no'})`, () => {
  it('serves the tree to the worker, which answers from it, and refuses anyone without the token', async () => {
    const port = await freePort();
    // The document's server block, on loopback without TLS, over this test's tree and with the test's token.
    const server = block('edge.md', 'nginx', 'risk-readings-origin')
      .replace('listen 443 ssl;', `listen 127.0.0.1:${port};`)
      .replace(/^\s*ssl_certificate.*$/gm, '')
      .replace('root /srv/risk-readings;', `root ${builtTree()};`)
      .replace('ORIGIN-TOKEN', ORIGIN_TOKEN);
    const prefix = join(root, 'nginx');
    mkdirSync(prefix, { recursive: true });
    const conf = join(prefix, 'nginx.conf');
    writeFileSync(
      conf,
      // Its workers as this test's user, who can read the test's private tree (nginx would take `nobody`).
      `${process.getuid?.() === 0 ? 'user root;\n' : ''}daemon off;\npid ${prefix}/nginx.pid;\nerror_log ${prefix}/error.log;\nevents {}\nhttp {\n  access_log off;\n` +
        `  client_body_temp_path ${prefix}/body;\n  proxy_temp_path ${prefix}/proxy;\n  fastcgi_temp_path ${prefix}/fastcgi;\n` +
        `  uwsgi_temp_path ${prefix}/uwsgi;\n  scgi_temp_path ${prefix}/scgi;\n${server}\n}\n`,
    );
    nginx = spawn(NGINX, ['-p', prefix, '-c', conf], { stdio: 'ignore' });
    const url = `http://127.0.0.1:${port}`;
    expect(await until(async () => (await fetch(`${url}/v1/_manifest.json`).catch(() => null))?.status === 401, 60_000, 100)).toBe(true);
    const bearer = (token: string) => fetch(`${url}/v1/_manifest.json`, { headers: { Authorization: `Bearer ${token}` } });
    expect((await bearer('another-token')).status).toBe(401);
    expect((await bearer(ORIGIN_TOKEN)).status).toBe(200);
    expect((await fetch(`${url}/.risk-readings-quotas.sqlite`, { headers: { Authorization: `Bearer ${ORIGIN_TOKEN}` } })).status).toBe(404);
    edge = await startEdge({ out: builtTree(), keys: readFileSync(KEYS_FILE, 'utf8'), bindings: { ORIGIN_URL: `${url}/` } });
    const res = await edge.call('/v1/assets/BTC/risk', { headers: { 'X-API-Key': KEY.pro } });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: { symbol: string } }).data.symbol).toBe('BTC');
  });
});

describe('a host name of your own', () => {
  it.each([
    ['a custom domain', 'routes = [{ pattern = "api.example.com", custom_domain = true }]'],
    ['a route in a zone', 'routes = [{ pattern = "api.example.com/*", zone_name = "example.com" }]'],
  ])('wrangler takes %s as docs/edge.md writes it', (_name, line) => {
    expect(readFileSync(join(ROOT, 'docs', 'edge.md'), 'utf8')).toContain(line);
    // wrangler.toml with the line at its top level, beside it (its paths are relative to it), removed after.
    const config = readFileSync(WRANGLER_CONFIG, 'utf8').replace('\n[assets]', `\n${line}\n\n[assets]`);
    const file = join(ROOT, `wrangler.routes-test-${process.pid}.toml`);
    writeFileSync(file, config);
    try {
      const dir = join(root, `bundle-${line.length}`);
      expect(() => bundleWorker(undefined, dir, file)).not.toThrow();
    } finally {
      rmSync(file, { force: true });
    }
  });
});
