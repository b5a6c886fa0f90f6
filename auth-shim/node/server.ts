/** The Node entry: the shim on an HTTP server, through @hono/node-server's fetch bridge. */
import { readFileSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import { keyStoreFromJson, type KeyStore } from '../credentials.js';
import { createHandler, type KeySource } from '../handler.js';
import type { QuotaStore } from '../quota.js';
import { FileOrigin } from './file-origin.js';

export interface ServeOptions {
  publicDir: string;
  keysFile?: string;
  port?: number;
  host?: string;
  marketplaceHost?: string;
  marketplaceSecret?: string;
  marketplaceName?: string;
  quotas?: QuotaStore;
  now?: () => number;
  watchMs?: number;
}

export function loadKeys(file: string): KeyStore {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new Error(`${file}: cannot read the key store (${(e as Error).message})`);
  }
  return keyStoreFromJson(json, file);
}

/**
 * The key file, live (decision 22): polled every second, so a key added or revoked with `keys add` / `keys revoke`
 * (or by hand) is in force within 2 s, with no restart and no count reset. A file that no longer parses leaves the
 * previous store in force, and the log says why.
 */
export function liveKeys(file: string, log: (m: string) => void, pollMs = 1_000): KeySource & { close(): void } {
  // The file's identity is taken with the store it was read into, so a change made at any moment, even before
  // the first poll, is seen at the next one.
  const stamp = () => {
    try {
      const st = statSync(file);
      return `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch {
      return 'absent';
    }
  };
  let seen = stamp();
  let store = loadKeys(file);
  const timer = setInterval(() => {
    const now = stamp();
    if (now === seen) return;
    seen = now;
    try {
      store = loadKeys(file);
      log(`keys: reloaded ${file} (${store.size} keys)`);
    } catch (e) {
      log(`keys: ${(e as Error).message}; keeping the previous ${store.size} keys`);
    }
  }, pollMs);
  timer.unref();
  return { current: () => store, close: () => clearInterval(timer) };
}

export async function startServer(o: ServeOptions): Promise<{ server: Server; origin: FileOrigin; url: string }> {
  const origin = FileOrigin.open(o.publicDir, o.watchMs);
  const log = (m: string) => process.stderr.write(m + '\n');
  const keys = o.keysFile ? liveKeys(o.keysFile, log) : null;
  const handler = createHandler({
    origin,
    keys,
    marketplace: { host: o.marketplaceHost, secret: o.marketplaceSecret, name: o.marketplaceName },
    quotas: o.quotas,
    now: o.now,
    log,
  });
  const server = createServer({ maxHeaderSize: 16_384 }, getRequestListener(handler));
  server.on('close', () => {
    origin.close();
    keys?.close();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 8787, o.host ?? '127.0.0.1', () => resolve());
  });
  const a = server.address() as { address: string; port: number };
  return { server, origin, url: `http://${a.address.includes(':') ? `[${a.address}]` : a.address}:${a.port}` };
}
