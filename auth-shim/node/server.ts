/** The Node entry: the shim on an HTTP server, through @hono/node-server's fetch bridge. */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import { keyStoreFromJson, type KeyStore } from '../credentials.js';
import { createHandler } from '../handler.js';
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

export async function startServer(o: ServeOptions): Promise<{ server: Server; origin: FileOrigin; url: string }> {
  const origin = FileOrigin.open(o.publicDir, o.watchMs);
  const handler = createHandler({
    origin,
    keys: o.keysFile ? loadKeys(o.keysFile) : null,
    marketplace: { host: o.marketplaceHost, secret: o.marketplaceSecret, name: o.marketplaceName },
    quotas: o.quotas,
    now: o.now,
    log: (m) => process.stderr.write(m + '\n'),
  });
  const server = createServer({ maxHeaderSize: 16_384 }, getRequestListener(handler));
  server.on('close', () => origin.close());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 8787, o.host ?? '127.0.0.1', () => resolve());
  });
  const a = server.address() as { address: string; port: number };
  return { server, origin, url: `http://${a.address.includes(':') ? `[${a.address}]` : a.address}:${a.port}` };
}
