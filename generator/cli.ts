/**
 * The `risk-readings` command line: every command and its options, one line each; a command's work is in
 * commands/<name>.ts, loaded only when it runs. Exit status: 0 success, 1 the input (a page, a tree, a key file),
 * 2 usage; `build` adds 3 (the environment) and 4 (published carrying readings forward), decision 27 (exit.ts).
 * Every path a command is given is checked by the path rule (path-rule.ts) as the line is parsed (`existingPath`).
 */
import { Command, CommanderError, Option } from 'commander';
import { renderVersion } from './paths.js';
import { KEY_LIMIT_MAX } from './contract/plans.js';
import { EXAMPLES, HELP, USAGE_COLUMNS } from './commands/help.js';
import { command } from './commands/lazy-command.js';
import * as opt from './commands/options.js';

export function program(): Command {
  const cli = new Command('risk-readings')
    .description('Builds the Risk Readings API as static JSON from the published model pages.')
    .version(renderVersion().replace(/^risk-readings /, ''), '-V, --version', 'print the version')
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });
  const catalog = ['--catalog <file>', 'the asset catalogue (default: the committed one)', opt.existingPath('--catalog', 'file')] as const;
  const tree = ['--public <dir>', 'the folder holding v1/', opt.existingPath('--public', 'folder')] as const;
  const store = ['--keys <file>', 'the credential store', opt.existingPath('--keys', 'file', 'keys add creates one')] as const;
  const webhookStore = ['--quotas <file|redis://host:port|https://worker>', HELP.webhookStore, opt.quotaCounts('--quotas')] as const;

  command(cli, 'build', HELP.build, () => import('./commands/build.js').then((m) => m.run))
    .requiredOption('--pages <dir>', 'the published pages')
    .requiredOption('--out <dir>', 'where v1/ is published (a link swapped atomically to each new tree)')
    .option('--previous <dir|url>', HELP.previous)
    .option('--init', 'start a new ledger when there is no previous tree (otherwise exit 1)')
    .option('--catalog <file>', HELP.buildCatalog, opt.existingPath('--catalog', 'file'))
    .option('--now <iso>', 'the build time recorded in the manifest (default: the clock)', opt.instant('--now'))
    .option('--public-url <url>', HELP.publicUrl, opt.httpUrl('--public-url'))
    .option('--api-info <file>', "JSON: the served document's contact, license and termsOfService (see docs/cli.md)")
    .option('--keep-going', 'carry forward the previous reading of a page that is unreadable or missing, list it, and exit 4')
    .option('--json', 'print the build report as one JSON object on stdout (progress and summary go to stderr)')
    .option('--jobs <n>', 'parser threads (default: one per core but one; 1 parses in-process)', opt.positiveInt('--jobs'));
  command(cli, 'inspect', 'print what the parsers extract from page files', () => import('./commands/inspect.js').then((m) => m.run))
    .argument('<file...>', 'page files', opt.existingPaths('FILE', 'file'))
    .option('--json', 'a JSON array, one object per file')
    .option(...catalog);
  command(cli, 'check', HELP.check, () => import('./commands/check.js').then((m) => m.run))
    .option(...tree)
    .option('--out <dir>', 'deprecated spelling of --public', opt.existingPath('--out', 'folder'));
  command(cli, 'diff', HELP.diff, () => import('./commands/diff.js').then((m) => m.run))
    .argument('<old>', 'the older tree (a folder holding v1/)', opt.treeArgument('OLD'))
    .argument('<new>', 'the newer tree', opt.treeArgument('NEW'))
    .option('--json', 'the same report as data')
    .option('--asset <symbol>', "only this asset's readings, history and catalogue entries", opt.symbol('--asset'));

  command(cli, 'serve', 'run the auth shim over a built tree', () => import('./commands/serve.js').then((m) => m.run))
    .option(...tree)
    .option('--keys <file>', HELP.serveKeys, opt.existingPath('--keys', 'file'))
    .option('--quotas <file|redis://host:port|memory>', HELP.quotas, opt.quotaStore('--quotas'))
    .addOption(new Option('--quotas-wait <duration>', HELP.quotasWait).argParser(opt.duration('--quotas-wait')).default(30_000, '30s'))
    .option('--discard-damaged-quotas', HELP.discardDamaged)
    .option('--port <p>', 'port', opt.port('--port'), 8787)
    .option('--host <h>', 'address to listen on', '127.0.0.1')
    .option('--reuse-port', 'share the port with a serve still running (a rolling restart; Linux, FreeBSD): see docs/production.md')
    .option('--marketplace-host <h>', 'the listing host the x-marketplace-host header must carry')
    .option('--marketplace-secret-file <file>', HELP.marketplaceSecretFile, opt.existingPath('--marketplace-secret-file', 'file'))
    .option('--marketplace-secret <s>', 'the marketplace proxy secret; visible in the process list, prefer the file or the environment')
    .option('--marketplace-name <n>', HELP.marketplaceName, 'rapidapi')
    .option('--cors-origin <origin>', HELP.corsOrigin, opt.corsOrigin('--cors-origin'))
    .option('--webhooks-allow-loopback', HELP.webhooksAllowLoopback)
    .option('--webhooks-allow-port <p>', HELP.webhooksAllowPort, opt.ports('--webhooks-allow-port'))
    .addOption(
      new Option('--stale-after <duration>', HELP.staleAfter).argParser(opt.duration('--stale-after')).default(36 * 3_600_000, '36h'),
    )
    .option('--metrics-port <p>', 'serve Prometheus metrics at http://HOST:P/metrics', opt.port('--metrics-port'))
    .option('--log-level <level>', HELP.logLevel, opt.logLevel, 'info');

  // A key's own terms (decision 106), taken by keys add and keys set.
  const terms = {
    perMinute: ['--per-minute <n>', HELP.perMinute, opt.keyLimit('--per-minute', KEY_LIMIT_MAX.perMinute)],
    perMonth: ['--per-month <n>', HELP.perMonth, opt.keyLimit('--per-month', KEY_LIMIT_MAX.perMonth)],
    meta: ['--meta <json>', HELP.meta, opt.keyMeta('--meta')],
  } as const;
  const keys = cli.command('keys').description('manage direct keys').addHelpText('after', EXAMPLES.keys!);
  command(keys, 'add', HELP.add, () => import('./commands/keys.js').then((m) => m.add))
    .requiredOption('--plan <plan>', 'basic, pro or ultra', opt.plan)
    .requiredOption('--keys <file>', 'the credential store to add it to (created if absent)', opt.existingPath('--keys', 'new file'))
    .option('--label <l>', 'free text to recognise the key by (several keys may share one)', '')
    .option('--expires <when>', HELP.expires, opt.expiry('--expires'))
    .option(...terms.perMinute)
    .option(...terms.perMonth)
    .option(...terms.meta);
  command(keys, 'set', HELP.set, () => import('./commands/keys.js').then((m) => m.set))
    .requiredOption(...store)
    .option('--label <l>', 'change every key with exactly this label')
    .option('--sha256 <prefix>', 'change the key whose SHA-256 starts with these (8 or more) hex digits', opt.hashPrefix('--sha256'))
    .option(...terms.perMinute)
    .option(...terms.perMonth)
    .option(...terms.meta);
  command(keys, 'roll', HELP.roll, () => import('./commands/keys.js').then((m) => m.roll))
    .requiredOption(...store)
    .requiredOption('--label <l>', 'the label whose keys the new one replaces')
    .addOption(new Option('--overlap <span>', HELP.overlap).argParser(opt.overlap('--overlap')).default(86_400_000, '+24h'))
    .option('--expires <when>', HELP.rollExpires, opt.expiry('--expires'));
  command(keys, 'list', HELP.list, () => import('./commands/keys.js').then((m) => m.list))
    .requiredOption(...store)
    .option('--revoked', 'list the revoked keys too, after the others (state revoked, with when), as billing keeps them')
    .option('--json', 'a JSON array');
  command(keys, 'revoke', HELP.revoke, () => import('./commands/keys.js').then((m) => m.revoke))
    .requiredOption(...store)
    .option('--label <l>', 'revoke every key with exactly this label')
    .option('--sha256 <prefix>', 'revoke the key whose SHA-256 starts with these (8 or more) hex digits', opt.hashPrefix('--sha256'));
  command(cli, 'usage', HELP.usage, () => import('./commands/usage.js').then((m) => m.run))
    .option('--quotas <file|redis://host:port|https://worker>', HELP.usageQuotas, opt.quotaCounts('--quotas'))
    .requiredOption('--keys <file>', "the credential store, for each key's label and plan", opt.existingPath('--keys', 'file'))
    .option('--month <YYYY-MM>', 'the calendar month (UTC) to report (default: the current one)', opt.yearMonth('--month'))
    .addOption(new Option('--json', `an array of {${USAGE_COLUMNS.join(', ')}}`).conflicts('csv'))
    .option('--csv', 'the same columns as CSV, with a header line');
  const hooks = cli.command('webhooks').description(HELP.webhooks).addHelpText('after', EXAMPLES.webhooks!);
  const hook = (name: 'list' | 'disable' | 'enable', about: string) =>
    command(hooks, name, about, () => import('./commands/webhooks.js').then((m) => m[name])).option(...webhookStore);
  hook('list', "every customer's endpoints: owner, state, position, message in flight").option('--json', 'a JSON array');
  hook('disable', 'stop delivering to an endpoint').argument('<id>', 'the endpoint (ep_...)').option('--reason <text>', HELP.disableReason);
  hook('enable', 'deliver to it again, from its first message not delivered').argument('<id>', 'the endpoint (ep_...)');
  command(cli, 'preview', 'browse a built tree as plain files, no auth', () => import('./commands/preview.js').then((m) => m.run))
    .option(...tree)
    .option('--port <p>', 'port', opt.port('--port'), 8788)
    .option('--host <h>', 'address to listen on', '127.0.0.1');

  command(cli, 'fixtures', 'write the synthetic site as published on day N', () => import('./commands/fixtures.js').then((m) => m.run))
    .requiredOption('--out <dir>', 'where the pages are written')
    .option('--day <n>', 'publication day (1 = 2026-10-13)', opt.positiveInt('--day'), 1)
    .option('--assets <n>', 'only the first N assets (coverage-first order)', opt.positiveInt('--assets'))
    .option('--seed <s>', 'random seed', 'risk-readings')
    .option('--symbols <list>', 'exactly these assets, comma-separated')
    .option('--history-start <date>', 'cut every series to start on this date (small sites)', opt.calendarDate('--history-start'))
    .option(...catalog);
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
    process.exitCode = e instanceof CommanderError && e.exitCode === 0 ? 0 : 2;
    if (!(e instanceof CommanderError)) process.stderr.write(`risk-readings: ${(e as Error).message}\n`);
  }
}

await main();
