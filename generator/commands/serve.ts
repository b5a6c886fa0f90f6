/** `risk-readings serve`: the auth shim over a built tree, until SIGTERM or SIGINT. */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startServer } from '../../auth-shim/node/server.js';
import { openQuotaStore, QuotaFileDamaged, QuotaFileHeld } from '../../auth-shim/node/quota-stores.js';
import type { QuotaStore } from '../../auth-shim/quota.js';
import { createLogger } from '../../auth-shim/node/observe.js';
import { quotaStore, treeFolder } from './options.js';

export interface ServeFlags {
  public?: string;
  keys?: string;
  quotas?: string;
  port: number;
  host: string;
  marketplaceHost?: string;
  marketplaceSecretFile?: string;
  marketplaceSecret?: string;
  marketplaceName: string;
  staleAfter: number;
  quotasWait: number;
  discardDamagedQuotas?: boolean;
  metricsPort?: number;
  logLevel: string;
}

/** A secret given on the command line is visible to every user of the machine (`ps`): say so, and how else. */
function warnSecretOnCommandLine(option: string, env: string, file?: string): void {
  process.stderr.write(
    `warning: ${option} on the command line is visible to other users in the process list; set ${env}${file ? ` or pass ${file}` : ''} instead\n`,
  );
}

function readSecretFile(option: string, file: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch (e) {
    throw new Error(`${option} ${file}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, { cause: e });
  }
}

export async function run(o: ServeFlags): Promise<void> {
  const publicDir = treeFolder('serve', o, resolve);
  const logger = createLogger(o.logLevel);
  if (o.marketplaceSecret !== undefined)
    warnSecretOnCommandLine('--marketplace-secret', 'RISK_READINGS_MARKETPLACE_SECRET', '--marketplace-secret-file');
  if (o.quotas && /^rediss?:\/\/[^/]*:[^/@]*@/.test(o.quotas)) warnSecretOnCommandLine('a password in --quotas', 'RISK_READINGS_QUOTAS');
  const secret = o.marketplaceSecretFile
    ? readSecretFile('--marketplace-secret-file', resolve(o.marketplaceSecretFile))
    : (o.marketplaceSecret ?? process.env.RISK_READINGS_MARKETPLACE_SECRET);
  const fromEnv = process.env.RISK_READINGS_QUOTAS;
  // The environment's store is held to the path rule --quotas is (exit 2 naming it), before anything starts.
  const quotaSpec = o.quotas ?? (fromEnv ? quotaStore('RISK_READINGS_QUOTAS')(fromEnv) : join(publicDir, '.risk-readings-quotas.json'));
  let quotas: QuotaStore;
  try {
    quotas = await openQuotaStore(quotaSpec, (m) => logger.warn(m), o.quotasWait, { discardDamaged: o.discardDamagedQuotas });
  } catch (e) {
    if (!(e instanceof QuotaFileHeld || e instanceof QuotaFileDamaged)) throw e;
    // The environment, not the usage: another process holds the file, or it is damaged (decision 27's exit 3).
    process.stderr.write(`risk-readings serve: ${e.message}\n`);
    logger.flush();
    process.exit(3); // the logger's flush timer would keep a server that never started alive
  }
  // A server that cannot start lets go of its quota store (a Redis client would keep the process alive).
  const { server, url, metricsUrl } = await startServer({
    publicDir,
    keysFile: o.keys && resolve(o.keys),
    port: o.port,
    host: o.host,
    quotas,
    logger,
    staleAfterMs: o.staleAfter,
    metricsPort: o.metricsPort,
    marketplaceHost: o.marketplaceHost,
    marketplaceSecret: secret || undefined,
    marketplaceName: o.marketplaceName,
  }).catch(async (e: NodeJS.ErrnoException & { port?: number }) => {
    await quotas.close?.();
    // A port taken or not ours to bind is the machine's state, not the command's: exit 3, named.
    if (e.code === 'EADDRINUSE' || e.code === 'EACCES') {
      const why = e.code === 'EADDRINUSE' ? 'already in use' : 'not permitted';
      process.stderr.write(
        `risk-readings serve: ${e.port === o.metricsPort ? '--metrics-port' : '--port'} ${e.port} on ${o.host}: ${why}\n`,
      );
      logger.flush();
      process.exit(3);
    }
    throw e;
  });
  // Counts reach their store before the process goes: a deploy or restart loses none of them.
  const stop = async () => {
    server.close();
    await quotas.close?.();
    logger.flush();
    process.exit(0);
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  const keys = o.keys ? 'keys from ' + resolve(o.keys) : 'no key store: data endpoints answer 503';
  const where = quotaSpec.replace(/\/\/[^@/]*@/, '//***@');
  process.stderr.write(
    `serving ${publicDir}/v1 at ${url}/v1/, docs at ${url}/docs (${keys}; quotas in ${where}${metricsUrl ? `; metrics at ${metricsUrl}` : ''})\n`,
  );
}
