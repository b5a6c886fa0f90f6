/**
 * The edge entry under workerd (miniflare), as it is deployed: bundled by wrangler from wrangler.toml (`wrangler
 * deploy --dry-run --outdir DIR`, which needs no network and no login) and run with the bindings that file
 * declares, translated by wrangler itself (unstable_getMiniflareWorkerOptions): the static assets holding Swagger
 * UI's files, the KV namespace of the key store, the Durable Object of quotas, the vars. Only the origin is the
 * test's: a private one on loopback that answers only with the edge's token.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { Miniflare, type WorkerOptions } from 'miniflare';
import handler from 'serve-handler';
import { inject } from 'vitest';
import type { DurableObjectNamespaceLike } from '../../auth-shim/durable-quota.js';
import { KEYS_ENTRY } from '../../auth-shim/edge-keys.js';
import { ROOT } from '../helpers.js';

export const ORIGIN_TOKEN = 'edge-origin-token-for-tests';
const MARKETPLACE_HOST = 'risk-readings.marketplace.example';
export const WRANGLER_CONFIG = join(ROOT, 'wrangler.toml');
const WRANGLER = join(ROOT, 'node_modules', 'wrangler', 'bin', 'wrangler.js');

/** Wrangler offline and quiet: no banner (its update check), no metrics, warnings kept out of the test report. */
export const WRANGLER_ENV = { WRANGLER_SEND_METRICS: 'false', WRANGLER_HIDE_BANNER: 'true', WRANGLER_LOG: 'error' };

/** `npx wrangler ...args` in the repository, as an operator runs it. */
function wrangler(args: string[], env: Record<string, string> = {}) {
  const logs = mkdtempSync(join(tmpdir(), 'rr-wrangler-logs-'));
  try {
    return spawnSync(process.execPath, [WRANGLER, ...args], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, ...WRANGLER_ENV, WRANGLER_LOG_PATH: logs, ...env },
    });
  } finally {
    rmSync(logs, { recursive: true, force: true });
  }
}

/**
 * The worker module wrangler deploys, bundled from `entry` (wrangler.toml's `main` when absent) into a new folder:
 * `wrangler deploy --dry-run --outdir DIR`, with wrangler.toml or another `config`. Returns the module's path.
 */
export function bundleWorker(entry: string | undefined, dir: string, config?: string): string {
  const r = wrangler(['deploy', '--dry-run', '--outdir', dir, ...(config ? ['--config', config] : []), ...(entry ? [entry] : [])]);
  if (r.status !== 0) throw new Error(`wrangler deploy --dry-run failed (${r.status}):\n${r.stdout}${r.stderr}`);
  return join(dir, bundledName(entry));
}

/** The module wrangler writes for `entry`: its file name as `.js` (wrangler.toml's main is `edge.ts`). */
const bundledName = (entry: string | undefined) => `${(entry ?? 'edge').replace(/^.*\//, '').replace(/\.ts$/, '')}.js`;

/**
 * `entry` bundled once a run, in the folder the end-to-end project's setup gives (tree-setup.ts): the same entry and
 * wrangler.toml make the same bundle, and wrangler takes about 2 s of CPU to make it. Two files asking at once both
 * bundle; the first to rename its folder into place wins, the other's is dropped.
 */
function runBundle(entry: string | undefined): string {
  const dir = join(inject('edgeBundles'), (entry ?? 'main').replace(/[^\w.-]+/g, '_'));
  const module = join(dir, bundledName(entry));
  if (existsSync(module)) return module;
  const made = mkdtempSync(`${dir}.`);
  bundleWorker(entry, made);
  try {
    renameSync(made, dir);
  } catch {
    rmSync(made, { recursive: true, force: true });
  }
  return module;
}

/**
 * wrangler.toml as Miniflare's options, translated by wrangler (its warnings, such as secrets unset here, muted), once
 * a run: kept as JSON beside the bundles, so only the first file to start an edge loads wrangler (1.5 s of CPU).
 */
async function configuredOptions(): Promise<WorkerOptions> {
  const kept = join(inject('edgeBundles'), 'worker-options.json');
  if (existsSync(kept)) return JSON.parse(readFileSync(kept, 'utf8')) as WorkerOptions;
  const { unstable_getMiniflareWorkerOptions } = await import('wrangler');
  const level = process.env.WRANGLER_LOG;
  process.env.WRANGLER_LOG = 'error';
  try {
    const options = unstable_getMiniflareWorkerOptions(WRANGLER_CONFIG).workerOptions;
    writeFileSync(`${kept}.${process.pid}`, JSON.stringify(options));
    renameSync(`${kept}.${process.pid}`, kept);
    return options;
  } finally {
    if (level === undefined) delete process.env.WRANGLER_LOG;
    else process.env.WRANGLER_LOG = level;
  }
}

/**
 * A second worker beside the edge, bound to its objects and its KV namespaces, that a test asks over fetch at
 * OBJECTS_HOST (every other host reaches the edge): `PUT /kv/BINDING/KEY` writes a value, `/do/BINDING/NAME` forwards
 * the request to the object named NAME, at the URL in `x-object-url`. Never miniflare's own proxies
 * (`getDurableObjectNamespace`, `getKVNamespace`, `getWorker`): their calls block on a helper thread, and under load
 * one call once read another's reply, after which every call read the one before's (CI: `message?.id === id`).
 */
const OBJECTS_HOST = 'objects.test';
const OBJECTS_WORKER = `export default {
  async fetch(req, env) {
    const [, kind, binding, name] = new URL(req.url).pathname.split('/').map(decodeURIComponent);
    if (kind === 'kv') {
      await env[binding].put(name, await req.text());
      return new Response(null, { status: 204 });
    }
    const ns = env[binding];
    return ns.get(ns.idFromName(name)).fetch(req.headers.get('x-object-url'), { method: req.method, body: req.body });
  },
};`;

export interface Edge {
  mf: Miniflare;
  /** A Durable Object namespace of the edge's, reached from Node (see OBJECTS_WORKER). */
  objects(binding: string): DurableObjectNamespaceLike;
  /** The private origin serving the tree. */
  origin: Server;
  originUrl: string;
  call(path: string, init?: { headers?: Record<string, string>; method?: string }): Promise<Response>;
  /** Writes the key store as the edge reads it: KV's `keys.json`. */
  putKeys(json: string): Promise<void>;
  close(): Promise<void>;
}

interface EdgeOptions {
  /** The module bundled as the worker (default: wrangler.toml's main, the production entry). */
  entry?: string;
  /** The built tree the origin serves. */
  out: string;
  /** The key store put in KV before the first request; none when absent. */
  keys?: string;
  /** Bindings over the config's vars (ORIGIN_TOKEN among them: a token the origin refuses). */
  bindings?: Record<string, string>;
  /** ORIGIN_URL's path on the origin, as an operator writes it (default `/`, the folder holding v1/). */
  originPath?: string;
  /** Answers an origin request itself (true) before the tree is served: a misbehaving origin. */
  intercept?: (req: IncomingMessage, res: ServerResponse) => boolean;
  /** Local persistence for KV (as `wrangler kv key put --local --persist-to DIR` writes it). */
  persistTo?: string;
  /** Takes what the worker says on stderr (its log) instead of the test report. */
  onStderr?: (text: string) => void;
}

export async function startEdge(o: EdgeOptions): Promise<Edge> {
  // The origin side of a private deployment: nothing without the token the edge holds.
  const origin = createServer((req, res) => {
    if (req.headers.authorization !== `Bearer ${ORIGIN_TOKEN}`) {
      res.writeHead(401).end();
      return;
    }
    if (o.intercept?.(req, res)) return;
    void handler(req, res, { public: o.out, symlinks: true });
  });
  await new Promise<void>((r) => origin.listen(0, '127.0.0.1', () => r()));
  const originUrl = `http://127.0.0.1:${(origin.address() as { port: number }).port}/`;
  // Bundled first: wrangler's build step makes the assets folder the config names, which reading the config needs.
  const scriptPath = runBundle(o.entry);
  const workerOptions = await configuredOptions();
  // The storage Miniflare would keep in a folder of its own under /tmp, which its dispose removes without waiting (a
  // test process that ends first leaves it behind): in one of ours, removed by close.
  const storage = mkdtempSync(join(tmpdir(), 'rr-edge-storage-'));
  const mf = new Miniflare({
    defaultPersistRoot: storage,
    workers: [
      {
        ...workerOptions,
        name: 'edge',
        modules: true,
        scriptPath,
        modulesRoot: dirname(scriptPath),
        bindings: {
          ...workerOptions.bindings,
          ORIGIN_URL: new URL(o.originPath ?? '/', originUrl).toString(),
          ORIGIN_TOKEN,
          MARKETPLACE_HOST,
          ...o.bindings,
        },
      },
      {
        name: 'objects',
        modules: true,
        script: OBJECTS_WORKER,
        routes: [`${OBJECTS_HOST}/*`],
        kvNamespaces: workerOptions.kvNamespaces,
        durableObjects: Object.fromEntries(
          Object.entries(workerOptions.durableObjects ?? {}).map(([binding, d]) => [
            binding,
            { ...(d as { className: string }), scriptName: 'edge' },
          ]),
        ),
      },
    ],
    ...(o.persistTo ? { kvPersist: join(o.persistTo, 'v3', 'kv') } : {}),
    // The worker's access lines (one a request, on stdout) would bury the test report; what it says on stderr stays.
    handleRuntimeStdio: (stdout: Readable, stderr: Readable) => {
      stdout.resume();
      if (o.onStderr) stderr.setEncoding('utf8').on('data', o.onStderr);
      else stderr.pipe(process.stderr);
    },
  });
  const reach = (path: string, init: RequestInit) =>
    mf.dispatchFetch(`http://${OBJECTS_HOST}${path}`, init as never) as unknown as Promise<Response>;
  const objects = (binding: string): DurableObjectNamespaceLike => ({
    idFromName: (name) => name,
    get: (id) => ({
      fetch: (url, init) =>
        reach(`/do/${encodeURIComponent(binding)}/${encodeURIComponent(String(id))}`, {
          method: init?.method ?? 'GET',
          body: init?.body,
          headers: { 'x-object-url': url },
        }),
    }),
  });
  const putKeys = async (json: string) => {
    const res = await reach(`/kv/KEYS/${encodeURIComponent(KEYS_ENTRY)}`, { method: 'PUT', body: json });
    if (res.status !== 204) throw new Error(`putting the key store answered ${res.status}`);
  };
  if (o.keys !== undefined) await putKeys(o.keys);
  return {
    mf,
    objects,
    origin,
    originUrl,
    call: (path, init = {}) =>
      mf.dispatchFetch(`http://edge.test${path}`, { method: init.method ?? 'GET', headers: init.headers }) as unknown as Promise<Response>,
    putKeys,
    close: async () => {
      await mf.dispose();
      rmSync(storage, { recursive: true, force: true });
      origin.closeAllConnections();
      await new Promise<void>((r) => origin.close(() => r()));
    },
  };
}
