/**
 * `risk-readings serve`: the auth shim over a built tree, until SIGTERM or SIGINT, which drain it: it stops
 * accepting, answers what is in flight, saves its quota counts and lets go of their store. With `--reuse-port` a new
 * server listens beside the one it replaces before that one stops, and holds the requests it receives until the old
 * one has let go of the quota file: a rolling restart on one port refuses no connection and drops no request.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { startServer } from '../../auth-shim/node/server.js';
import {
  LegacyQuotaDamaged,
  openQuotaStore,
  QuotaStoreDamaged,
  QuotaStoreHeld,
  QuotaStoreUnwritable,
  UnrecordedCharges,
  webhookStoreBeside,
} from '../../auth-shim/node/quota-stores.js';
import { createLogger } from '../../auth-shim/node/observe.js';
import type { QuotaStore } from '../../auth-shim/quota.js';
import { DEFAULT_QUOTAS, quotaStore, treeFolder, warnPasswordInQuotas, warnSecretOnCommandLine } from './options.js';

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
  reusePort?: boolean;
  /** `--cors-origin`, each as a browser's Origin carries it (decision 105). */
  corsOrigin?: string[];
  /** `--webhooks-allow-loopback` (decision 108): deliver to loopback and plain http too, for tests and demos. */
  webhooksAllowLoopback?: boolean;
  /** `--webhooks-allow-port`: https ports besides 443 webhooks may be delivered to. */
  webhooksAllowPort?: number[];
}

function readSecretFile(option: string, file: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch (e) {
    throw new Error(`${option} ${file}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, { cause: e });
  }
}

/** Why `port` on `host` cannot be listened on now (EADDRINUSE, EACCES), or null: a listener closed as soon as it binds. */
function bindRefusal(port: number, host: string): Promise<(NodeJS.ErrnoException & { port: number }) | null> {
  return new Promise((done) => {
    const probe = createServer();
    probe.once('error', (e: NodeJS.ErrnoException) => done(Object.assign(e, { port })));
    probe.listen({ port, host }, () => probe.close(() => done(null)));
  });
}

/** A port taken or not ours to bind, as serve names it: the machine's state, not the command's (exit 3). */
function portProblem(e: NodeJS.ErrnoException & { port?: number }, o: ServeFlags): string | null {
  const option = e.port === o.metricsPort ? '--metrics-port' : '--port';
  if (e.code === 'EADDRINUSE' || e.code === 'EACCES')
    return `${option} ${e.port} on ${o.host}: ${e.code === 'EADDRINUSE' ? 'already in use' : 'not permitted'}`;
  return null;
}

export async function run(o: ServeFlags): Promise<void> {
  // A secret on the command line is already in the process list: said even when the command goes no further.
  if (o.marketplaceSecret !== undefined)
    warnSecretOnCommandLine('--marketplace-secret', 'RISK_READINGS_MARKETPLACE_SECRET', '--marketplace-secret-file');
  warnPasswordInQuotas(o.quotas);
  const fromEnv = process.env.RISK_READINGS_QUOTAS;
  // The environment's store is held to the path rule --quotas is (exit 2 naming it), as the options are.
  const givenQuotas = o.quotas ?? (fromEnv ? quotaStore('RISK_READINGS_QUOTAS')(fromEnv) : undefined);
  const publicDir = treeFolder('serve', o, resolve);
  const logger = createLogger(o.logLevel);
  const secret = o.marketplaceSecretFile
    ? readSecretFile('--marketplace-secret-file', resolve(o.marketplaceSecretFile))
    : (o.marketplaceSecret ?? process.env.RISK_READINGS_MARKETPLACE_SECRET);
  const quotaSpec = givenQuotas ?? join(publicDir, DEFAULT_QUOTAS);
  const where = quotaSpec.replace(/\/\/[^@/]*@/, '//***@');
  /** Exit 3, naming why: the environment, not the usage (decision 27). */
  const environment = (message: string): never => {
    process.stderr.write(`risk-readings serve: ${message}\n`);
    logger.flush();
    process.exit(3); // the logger's flush timer would keep a server that never started alive
  };
  // Without --reuse-port a port in use is why this server cannot start, whatever else it would wait for: a second
  // serve started by mistake beside a running one says so at once, not after --quotas-wait for that one's quota file.
  // A server draining has stopped listening, so a restart still waits for the file it is saving.
  if (!o.reusePort)
    for (const port of [o.port, o.metricsPort])
      if (port) {
        const refused = await bindRefusal(port, o.host);
        const problem = refused && portProblem(refused, o);
        if (problem) environment(problem);
      }
  // The default's name before the SQLite store: a quota file there is imported on the first start (decision 97).
  const legacy = givenQuotas ? undefined : join(publicDir, '.risk-readings-quotas.json');
  const opening = openQuotaStore(quotaSpec, (m) => logger.warn(m), o.quotasWait, {
    discardDamaged: o.discardDamagedQuotas,
    legacy,
    owedDir: publicDir,
  });
  let opened: QuotaStore | undefined;
  opening.then((q) => (opened = q)).catch(() => {}); // a failure is handled below, once it is awaited
  // Another process holds the file, it is damaged, or it cannot be written: the environment (decision 27's exit 3).
  const held = (e: unknown) => {
    if ([QuotaStoreHeld, QuotaStoreDamaged, QuotaStoreUnwritable, LegacyQuotaDamaged].some((kind) => e instanceof kind))
      environment((e as Error).message);
    throw e;
  };
  // Without --reuse-port the port is free only once the server before has stopped: open the store (waiting for the
  // one before to let go of it), then listen. With it, listen first and let requests wait for the store.
  const quotas = o.reusePort ? opening : await opening.catch(held);
  const webhooks = Promise.resolve(quotas).then((q) => webhookStoreBeside(q, quotaSpec));
  webhooks.catch(() => {}); // as the quota store's: handled where it is awaited
  if (o.webhooksAllowLoopback)
    process.stderr.write(
      'warning: --webhooks-allow-loopback: webhooks may be sent to this machine and over plain http; for tests and demos only\n',
    );
  const started = await startServer({
    publicDir,
    keysFile: o.keys && resolve(o.keys),
    port: o.port,
    host: o.host,
    quotas,
    webhooks,
    webhookPolicy: { allowLoopback: o.webhooksAllowLoopback ?? false, ports: o.webhooksAllowPort ?? [] },
    reusePort: o.reusePort,
    logger,
    staleAfterMs: o.staleAfter,
    metricsPort: o.metricsPort,
    marketplaceHost: o.marketplaceHost,
    marketplaceSecret: secret || undefined,
    marketplaceName: o.marketplaceName,
    corsOrigins: o.corsOrigin,
  }).catch(async (e: NodeJS.ErrnoException & { port?: number }) => {
    // A server that cannot start lets go of its quota store (a Redis client would keep the process alive); one still
    // waiting for a quota file is not waited for (a lock its dead holder left is taken over at once).
    await opened?.close?.();
    await (await webhooks.catch(() => undefined))?.close?.();
    const problem = portProblem(e, o);
    if (problem) environment(problem);
    if (o.reusePort && (e.code === 'ENOTSUP' || e.code === 'EOPNOTSUPP'))
      environment(`--reuse-port: this platform cannot share a port between processes (Linux 3.9+, FreeBSD 12+ can)`);
    throw e;
  });
  // Counts reach their store before the process goes: a deploy or restart loses none of them, nor a request. A
  // second signal (a double Ctrl-C, an impatient supervisor) does not cut that short: the stop is bounded (the drain,
  // then at most 5 s of saving), and SIGKILL is there for a stop that must not wait.
  let stopping = false;
  const stop = async () => {
    if (stopping) return void logger.warn('serve: stopping already (draining, then saving the counts); this signal is not needed');
    stopping = true;
    await started.drain();
    await (await webhooks.catch(() => undefined))?.close?.();
    // Counts the store could not save are kept beside it, and said: exit 3, as for a store that cannot be written.
    const unsaved = await (await opening.catch(() => undefined))?.close?.().then(
      () => null,
      (e: unknown) => (e instanceof QuotaStoreUnwritable || e instanceof UnrecordedCharges ? e.message : Promise.reject(e)),
    );
    if (unsaved) environment(unsaved);
    logger.flush();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  const { url, metricsUrl } = started;
  if (o.reusePort) {
    process.stderr.write(`listening at ${url} (--reuse-port); requests wait until the quotas in ${where} are open\n`);
    await started.ready.catch(async (e: unknown) => {
      process.removeListener('SIGTERM', stop);
      process.removeListener('SIGINT', stop);
      await started.drain();
      held(e);
    });
  }
  const keys = o.keys ? 'keys from ' + resolve(o.keys) : 'no key store: data endpoints answer 503';
  process.stderr.write(
    `serving ${publicDir}/v1 at ${url}/v1/, docs at ${url}/docs (${keys}; quotas in ${where}${metricsUrl ? `; metrics at ${metricsUrl}` : ''})\n`,
  );
}
