/**
 * The `risk-readings` command line. Exit status: 0 success, 1 a page or contract problem, 2 bad usage; `build`
 * adds 3 (the environment) and 4 (published carrying readings forward), decision 27 (see exit.ts).
 */
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { build, BuildError, type BuildReport } from './build.js';
import { renderVersion } from './paths.js';
import { EXIT } from './exit.js';
import { isCalendarDate } from './contract/time.js';
import { PLANS } from './contract/plans.js';
import { loadCatalog } from './catalog/catalog.js';
import { checkTree } from './check.js';
import { inspect, inspectText } from './inspect.js';

const positiveInt = (name: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`${name} takes a whole number from 1, not "${v}"`);
  return n;
};

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** A calendar date YYYY-MM-DD that exists. */
const calendarDate = (name: string) => (v: string) => {
  if (!isCalendarDate(v)) throw new InvalidArgumentError(`${name} takes a date YYYY-MM-DD, not "${v}"`);
  return v;
};

/** An ISO 8601 instant. */
const instant = (name: string) => (v: string) => {
  if (!/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2}))?$/.test(v) || !Number.isFinite(Date.parse(v))) {
    throw new InvalidArgumentError(`${name} takes an ISO 8601 time such as 2026-10-14T00:30:00Z, not "${v}"`);
  }
  return v;
};

/** A duration: a number with a unit s, m, h or d (hours when bare), in milliseconds. */
const duration = (name: string) => (v: string) => {
  const m = /^(\d+(?:\.\d+)?)([smhd]?)$/.exec(v.trim());
  const ms = m ? Number(m[1]) * { s: 1e3, m: 6e4, h: 3.6e6, d: 8.64e7, '': 3.6e6 }[m[2] as 's' | 'm' | 'h' | 'd' | ''] : NaN;
  if (!(ms > 0)) throw new InvalidArgumentError(`${name} takes a duration such as 36h, 90m or 2d, not "${v}"`);
  return ms;
};

const httpUrl = (name: string) => (v: string) => {
  if (v === '/') return v;
  try {
    if (/^https?:$/.test(new URL(v).protocol)) return v;
  } catch {
    // reported below
  }
  throw new InvalidArgumentError(`${name} takes an http(s) URL such as https://api.example.com, or /, not "${v}"`);
};

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

/** The tree folder option shared by check, serve and preview; `--out` is the older spelling on check. */
function treeFolder(command: string, o: { public?: string; out?: string }): string {
  if (o.out !== undefined) process.stderr.write(`warning: ${command} --out is deprecated; use --public (the folder holding v1/)\n`);
  const dir = o.public ?? o.out;
  if (dir === undefined) throw new Error(`${command}: --public <dir> is required (the folder holding v1/)`);
  return resolve(dir);
}

function printReport(r: Partial<BuildReport>, out: NodeJS.WriteStream) {
  if (r.assets !== undefined)
    out.write(
      `assets ${r.assets ?? '?'} · pages ${r.pages_read ?? '?'} (parsed ${r.pages_parsed ?? 0}, unchanged ${r.pages_reused ?? 0}) · files ${r.files_written ?? 0} (linked ${r.files_linked ?? 0}) · warnings ${r.warnings?.length ?? 0} · errors ${r.errors?.length ?? 0} · carried ${r.carried?.length ?? 0}\n`,
    );
  if (r.previous !== undefined)
    out.write(r.previous === null ? 'ledger: started new (--init)\n' : `ledger: continued from ${r.previous}\n`);
  for (const t of r.tidied ?? []) out.write(`tidied: ${t}\n`);
  if (r.sector_sources)
    out.write(
      `sector source: ${Object.entries(r.sector_sources)
        .map(([u, f]) => `${u} ← ${f ?? 'none'}`)
        .join(', ')}\n`,
    );
  if (r.ignored?.length) out.write(`ignored (not a source page): ${r.ignored.join(', ')}\n`);
  for (const w of r.warnings ?? []) out.write(`warning: ${w}\n`);
  for (const e of r.errors ?? []) out.write(`error: ${e}\n`);
  for (const c of r.carried ?? [])
    out.write(`carried: ${c.file} (${c.reason}): ${c.symbol ?? 'market'} keeps its previous ${c.kind} reading\n`);
}

/** `build --json`: the report as one JSON object on stdout, whatever the outcome. */
function jsonReport(status: string, exitCode: number, r: Partial<BuildReport>, out: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ status, exit_code: exitCode, out: `${out}/v1`, ...extra, ...r }) + '\n';
}

/** A key-store command: its error (naming the file and entry) on stderr and exit 1, never a stack. */
async function keysCommand<T>(fn: () => Promise<T>): Promise<T | undefined> {
  try {
    return await fn();
  } catch (e) {
    process.stderr.write(`risk-readings keys: ${(e as Error).message}\n`);
    process.exitCode = 1;
    return undefined;
  }
}

export function program(): Command {
  const cli = new Command('risk-readings')
    .description('Builds the Risk Readings API as static JSON from the published model pages.')
    .version(renderVersion().replace(/^risk-readings /, ''), '-V, --version', 'print the version')
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });

  cli
    .command('build')
    .description(
      'parse the site in --pages and write the tree to --out/v1 (exit 0 published, 1 input refused, 2 usage, 3 environment, 4 published carrying readings)',
    )
    .requiredOption('--pages <dir>', 'the published pages')
    .requiredOption('--out <dir>', 'where v1/ is published (a link swapped atomically to each new tree)')
    .option(
      '--previous <dir|url>',
      'the previous tree holding the history ledger: a folder holding v1/, or the URL of a deployed tree (default: --out); a bearer token for the URL from RISK_READINGS_PREVIOUS_TOKEN',
    )
    .option('--init', 'start a new ledger when there is no previous tree (otherwise exit 1)')
    .option('--catalog <file>', 'the asset catalogue (default: the committed one)')
    .option('--now <iso>', 'the build time recorded in the manifest (default: the clock)', instant('--now'))
    .option(
      '--public-url <url>',
      "the base URL clients call, written as the served OpenAPI document's servers (default /, the origin serving it)",
      httpUrl('--public-url'),
    )
    .option('--keep-going', 'carry forward the previous reading of a page that is unreadable or missing, list it, and exit 4')
    .option('--json', 'print the build report as one JSON object on stdout (progress and summary go to stderr)')
    .option('--jobs <n>', 'parser threads (default: one per core but one; 1 parses in-process)', positiveInt('--jobs'))
    .action(async (o) => {
      const out = resolve(o.out);
      const previous = o.previous && (/^https?:\/\//i.test(o.previous) ? o.previous : resolve(o.previous));
      try {
        const report = await build({
          pages: resolve(o.pages),
          out,
          previous,
          previousToken: process.env.RISK_READINGS_PREVIOUS_TOKEN,
          catalog: o.catalog && resolve(o.catalog),
          now: o.now,
          keepGoing: !!o.keepGoing,
          init: !!o.init,
          jobs: o.jobs,
          publicUrl: o.publicUrl,
        });
        const code = report.carried.length ? EXIT.carried : EXIT.published;
        printReport(report, process.stderr);
        process.stderr.write(
          code === EXIT.carried ? `built ${out}/v1, carrying ${report.carried.length} reading(s) forward (exit 4)\n` : `built ${out}/v1\n`,
        );
        if (o.json) process.stdout.write(jsonReport(code === EXIT.carried ? 'published_with_carried' : 'published', code, report, out));
        process.exitCode = code;
      } catch (e) {
        if (!(e instanceof BuildError)) {
          process.stderr.write(`build failed: internal error: ${(e as Error).message}\n`);
          if (process.env.RISK_READINGS_DEBUG) process.stderr.write(`${(e as Error).stack}\n`);
          if (o.json) process.stdout.write(jsonReport('failed', EXIT.input, { errors: [`internal error: ${(e as Error).message}`] }, out));
          process.exitCode = EXIT.input;
          return;
        }
        printReport(e.report, process.stderr);
        for (const p of e.problems.slice(0, 50)) if (!e.report.errors?.includes(p)) process.stderr.write(`problem: ${p}\n`);
        if (e.problems.length > 50) process.stderr.write(`problem: ... and ${e.problems.length - 50} more\n`);
        process.stderr.write(`build failed: ${e.message}\n`);
        if (o.json) process.stdout.write(jsonReport('failed', e.exitCode, e.report, out, { message: e.message, problems: e.problems }));
        process.exitCode = e.exitCode;
      }
    });

  cli
    .command('inspect')
    .description('print what the parsers extract from page files')
    .argument('<file...>', 'page files')
    .option('--json', 'a JSON array, one object per file')
    .option('--catalog <file>', 'the asset catalogue (default: the committed one)')
    .action(async (files: string[], o) => {
      const { items, failed } = await inspect(files, loadCatalog(o.catalog && resolve(o.catalog)));
      process.stdout.write(o.json ? JSON.stringify(items, null, 2) + '\n' : inspectText(items));
      if (failed) process.exitCode = 1;
    });

  cli
    .command('check')
    .description('validate an existing tree against the contract, the invariants and its manifest (compressed variants included)')
    .option('--public <dir>', 'the folder holding v1/')
    .option('--out <dir>', 'deprecated spelling of --public')
    .action(async (o) => {
      const problems = await checkTree(treeFolder('check', o));
      for (const p of problems) process.stderr.write(`problem: ${p}\n`);
      process.stdout.write(problems.length ? `${problems.length} problem(s)\n` : 'ok\n');
      if (problems.length) process.exitCode = 1;
    });

  cli
    .command('diff')
    .description('what changed between two built trees: 0 none, 1 changes, 2 trouble, 3 a published history row changed or vanished')
    .argument('<old>', 'the older tree (a folder holding v1/)')
    .argument('<new>', 'the newer tree')
    .option('--json', 'the same report as data')
    .option('--asset <symbol>', "only this asset's readings, history and catalogue entries")
    .action(async (oldDir: string, newDir: string, o) => {
      const { compareTrees, exitStatus } = await import('./diff/compare.js');
      const { asJson, human } = await import('./diff/format.js');
      const { diskLoader, TreeTrouble } = await import('./diff/loader.js');
      try {
        const result = await compareTrees(diskLoader(resolve(oldDir)), diskLoader(resolve(newDir)), o.asset?.toUpperCase());
        const status = exitStatus(result);
        process.stdout.write(o.json ? asJson(result, status) : human(result, !!process.stdout.isTTY && !process.env.NO_COLOR));
        process.exitCode = status;
      } catch (e) {
        if (!(e instanceof TreeTrouble)) throw e;
        process.stderr.write(`risk-readings diff: ${e.message}\n`);
        process.exitCode = 2;
      }
    });

  cli
    .command('serve')
    .description('run the auth shim over a built tree')
    .option('--public <dir>', 'the folder holding v1/')
    .option('--keys <file>', 'the credential store (without it data endpoints answer 503); reloaded within 2 s of a change')
    .option(
      '--quotas <file|redis://host:port|memory>',
      'where quota counts live: a file (default <public>/.risk-readings-quotas.json, kept across restarts), Redis shared by a fleet, or this process only; also RISK_READINGS_QUOTAS (a Redis URL with a password belongs there)',
    )
    .option('--port <p>', 'port', positiveInt('--port'), 8787)
    .option('--host <h>', 'address to listen on', '127.0.0.1')
    .option('--marketplace-host <h>', 'the listing host the x-marketplace-host header must carry')
    .option('--marketplace-secret-file <file>', 'a file holding the marketplace proxy secret (or RISK_READINGS_MARKETPLACE_SECRET)')
    .option('--marketplace-secret <s>', 'the marketplace proxy secret; visible in the process list, prefer the file or the environment')
    .option(
      '--marketplace-name <n>',
      "the marketplace's name in its header names, x-<name>-key (besides the neutral x-marketplace-*)",
      'rapidapi',
    )
    .option(
      '--stale-after <duration>',
      'health reads "stale" once the newest reading is older than this (36h, 90m, 2d; bare numbers are hours)',
      duration('--stale-after'),
      36 * 3_600_000,
    )
    .option('--metrics-port <p>', 'serve Prometheus metrics at http://HOST:P/metrics', positiveInt('--metrics-port'))
    .option(
      '--log-level <level>',
      `access and operations log on stdout, one JSON line each: ${LOG_LEVELS.join(', ')}`,
      (v: string) => {
        if (!(LOG_LEVELS as readonly string[]).includes(v))
          throw new InvalidArgumentError(`--log-level is one of ${LOG_LEVELS.join(', ')}, not "${v}"`);
        return v;
      },
      'info',
    )
    .action(async (o) => {
      const { startServer } = await import('../auth-shim/node/server.js');
      const { openQuotaStore } = await import('../auth-shim/node/quota-stores.js');
      const { createLogger } = await import('../auth-shim/node/observe.js');
      const publicDir = treeFolder('serve', o);
      const logger = createLogger(o.logLevel);
      if (o.marketplaceSecret !== undefined)
        warnSecretOnCommandLine('--marketplace-secret', 'RISK_READINGS_MARKETPLACE_SECRET', '--marketplace-secret-file');
      if (o.quotas && /^rediss?:\/\/[^/]*:[^/@]*@/.test(o.quotas))
        warnSecretOnCommandLine('a password in --quotas', 'RISK_READINGS_QUOTAS');
      const secret = o.marketplaceSecretFile
        ? readSecretFile('--marketplace-secret-file', resolve(o.marketplaceSecretFile))
        : (o.marketplaceSecret ?? process.env.RISK_READINGS_MARKETPLACE_SECRET);
      const quotaSpec = o.quotas ?? process.env.RISK_READINGS_QUOTAS ?? join(publicDir, '.risk-readings-quotas.json');
      const quotas = openQuotaStore(quotaSpec, (m) => logger.warn(m));
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
      }).catch(async (e) => {
        await quotas.close?.();
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
      process.stderr.write(
        `serving ${publicDir}/v1 at ${url}/v1/, docs at ${url}/docs (${o.keys ? 'keys from ' + resolve(o.keys) : 'no key store: data endpoints answer 503'}; quotas in ${quotaSpec.replace(/\/\/[^@/]*@/, '//***@')}${metricsUrl ? `; metrics at ${metricsUrl}` : ''})\n`,
      );
    });

  const keys = cli.command('keys').description('manage direct keys');
  keys
    .command('add')
    .description('issue a direct key: prints it once, alone, on stdout; stores only its SHA-256')
    .requiredOption('--plan <plan>', 'basic, pro or ultra', (v: string) => {
      if (!(PLANS as readonly string[]).includes(v)) throw new InvalidArgumentError('--plan is basic, pro or ultra');
      return v;
    })
    .requiredOption('--keys <file>', 'the credential store to add it to (created if absent)')
    .option('--label <l>', 'free text to recognise the key by', '')
    .action(async (o) => {
      const { addKey } = await import('./keys.js');
      const key = await keysCommand(() => addKey(resolve(o.keys), o.plan, o.label));
      if (key) process.stdout.write(key + '\n');
    });

  keys
    .command('list')
    .description('list the keys: label, plan, first 8 hex digits of the hash, created (never the key)')
    .requiredOption('--keys <file>', 'the credential store')
    .option('--json', 'a JSON array')
    .action(async (o) => {
      const { listKeys } = await import('./keys.js');
      const rows = await keysCommand(async () => listKeys(resolve(o.keys)));
      if (!rows) return;
      process.stdout.write(
        o.json
          ? JSON.stringify(rows, null, 2) + '\n'
          : rows.map((r) => `${r.sha256_prefix}  ${r.plan.padEnd(5)}  ${r.created ?? '-'.padEnd(20)}  ${r.label}`).join('\n') +
              (rows.length ? '\n' : ''),
      );
    });

  keys
    .command('revoke')
    .description('revoke keys by label, or the one key whose hash starts with a prefix; a running server drops them within 2 s')
    .requiredOption('--keys <file>', 'the credential store')
    .option('--label <l>', 'revoke every key with exactly this label')
    .option('--sha256 <prefix>', 'revoke the key whose SHA-256 starts with these (8 or more) hex digits')
    .action(async (o) => {
      if ((o.label === undefined) === (o.sha256 === undefined)) {
        process.stderr.write('risk-readings keys revoke: give one of --label or --sha256\n');
        process.exitCode = 2;
        return;
      }
      const { revokeKeys } = await import('./keys.js');
      const gone = await keysCommand(() => revokeKeys(resolve(o.keys), { label: o.label, sha256: o.sha256 }));
      for (const g of gone ?? []) process.stdout.write(`revoked ${g.sha256_prefix} ${g.plan} ${g.label}\n`);
    });

  cli
    .command('preview')
    .description('browse a built tree as plain files, no auth')
    .option('--public <dir>', 'the folder holding v1/')
    .option('--port <p>', 'port', positiveInt('--port'), 8788)
    .option('--host <h>', 'address to listen on', '127.0.0.1')
    .action(async (o) => {
      const { preview } = await import('./preview.js');
      const dir = treeFolder('preview', o);
      const server = await preview(dir, o.port, o.host);
      const a = server.address() as { port: number };
      process.stdout.write(`previewing ${dir} at http://${o.host}:${a.port}/v1/ (plain files, no auth; Ctrl-C stops)\n`);
    });

  cli
    .command('fixtures')
    .description('write the synthetic site as published on day N')
    .requiredOption('--out <dir>', 'where the pages are written')
    .option('--day <n>', 'publication day (1 = 2026-10-13)', positiveInt('--day'), 1)
    .option('--assets <n>', 'only the first N assets (coverage-first order)', positiveInt('--assets'))
    .option('--seed <s>', 'random seed', 'risk-readings')
    .option('--symbols <list>', 'exactly these assets, comma-separated')
    .option('--history-start <date>', 'cut every series to start on this date (small sites)', calendarDate('--history-start'))
    .option('--catalog <file>', 'the asset catalogue (default: the committed one)')
    .action(async (o) => {
      const { writeSite } = await import('../fixtures/synth/site.js');
      const catalog = loadCatalog(o.catalog && resolve(o.catalog));
      const t = Date.now();
      const r = await writeSite({
        out: resolve(o.out),
        day: o.day,
        assets: o.assets,
        seed: o.seed,
        symbols: o.symbols?.split(','),
        historyStart: o.historyStart,
        catalog,
      });
      process.stdout.write(
        `wrote ${r.files.length} pages for ${r.assets.length} assets (day ${o.day}) to ${resolve(o.out)} in ${((Date.now() - t) / 1000).toFixed(1)} s\n`,
      );
    });
  return cli;
}

export async function main(argv = process.argv): Promise<void> {
  // A reader that stops early (`| head`) closes stdout: that is no failure of ours, so leave quietly.
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw e;
  });
  try {
    await program().parseAsync(argv);
  } catch (e) {
    if (e instanceof CommanderError) {
      process.exitCode = e.exitCode === 0 ? 0 : 2;
      return;
    }
    process.stderr.write(`risk-readings: ${(e as Error).message}\n`);
    process.exitCode = 2;
  }
}

await main();
