/**
 * The edge entry under workerd (miniflare), as its tests start it: a worker bundled as one module for a neutral
 * platform, reading the tree over HTTP from a private origin on loopback that answers only with the edge's token,
 * with the key store in a binding and quotas in a Durable Object per credential.
 */
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { build } from 'esbuild';
import { Miniflare } from 'miniflare';
import handler from 'serve-handler';
import { ROOT } from '../helpers.js';

const ORIGIN_TOKEN = 'edge-origin-token-for-tests';
const MARKETPLACE_HOST = 'risk-readings.marketplace.example';

export interface Edge {
  mf: Miniflare;
  /** The private origin serving the tree. */
  origin: Server;
  call(path: string, init?: { headers?: Record<string, string>; method?: string }): Promise<Response>;
  close(): Promise<void>;
}

/** The worker `entry` (a module of this repository) in front of the tree `out`, with these bindings besides the origin's. */
export async function startEdge(entry: string, out: string, bindings: Record<string, string>): Promise<Edge> {
  // The origin side of a private deployment: nothing without the token the edge holds.
  const origin = createServer((req, res) => {
    if (req.headers.authorization !== `Bearer ${ORIGIN_TOKEN}`) {
      res.writeHead(401).end();
      return;
    }
    void handler(req, res, { public: out, symlinks: true });
  });
  await new Promise<void>((r) => origin.listen(0, '127.0.0.1', () => r()));
  const bundle = await build({
    entryPoints: [join(ROOT, entry)],
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    write: false,
  });
  const mf = new Miniflare({
    modules: true,
    script: bundle.outputFiles[0]!.text,
    compatibilityDate: '2025-01-01',
    bindings: {
      ORIGIN_URL: `http://127.0.0.1:${(origin.address() as { port: number }).port}/`,
      ORIGIN_TOKEN,
      MARKETPLACE_HOST,
      ...bindings,
    },
    durableObjects: { QUOTAS: 'QuotaCounter' },
    // The worker's access lines (one a request, on stdout) would bury the test report; what it says on stderr stays.
    handleRuntimeStdio: (stdout: Readable, stderr: Readable) => {
      stdout.resume();
      stderr.pipe(process.stderr);
    },
  });
  return {
    mf,
    origin,
    call: (path, init = {}) =>
      mf.dispatchFetch(`http://edge.test${path}`, { method: init.method ?? 'GET', headers: init.headers }) as unknown as Promise<Response>,
    close: async () => {
      await mf.dispose();
      await new Promise<void>((r) => origin.close(() => r()));
    },
  };
}
