/** The command line as scripts and operators use it: compiled, through bin/, with its exit statuses. */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, sitePages, tempDir } from '../helpers.js';

const BIN = join(ROOT, 'bin', 'risk-readings.js');
const run = (...args: string[]) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', cwd: ROOT });
const root = tempDir('rr-cli-');
const cases = join(ROOT, 'fixtures', 'cases');

describe('risk-readings --help', () => {
  it('shows examples after the options, and every option an example uses is one its command takes', () => {
    for (const name of ['build', 'diff', 'serve', 'keys', 'check']) {
      const help = run(name, '--help').stdout;
      const examples = help.slice(help.indexOf('\nExamples:\n'));
      expect(examples.length, name).toBeGreaterThan(20);
      for (const line of examples.split('\n').filter((l) => l.includes('$ risk-readings'))) {
        const argv = line.split('#')[0]!.trim().split(/\s+/).slice(2);
        // `keys` examples name a subcommand: its own help lists its options.
        const own = name === 'keys' ? run('keys', argv[1]!, '--help').stdout : help;
        for (const option of argv.filter((a) => a.startsWith('--')))
          expect(own, `${line}: ${option}`).toMatch(new RegExp(`^\\s+${option}\\b`, 'm'));
      }
    }
  });
});

describe('risk-readings (compiled)', () => {
  it("a small synthetic site builds quiet and claims only its assets: the pages folder's catalogue is the default", () => {
    const site = join(root, 'few');
    expect(run('fixtures', '--out', site, '--symbols', 'SPY,NVDA,IONQ').status).toBe(0);
    const out = join(root, 'few-out');
    const r = run('build', '--pages', site, '--out', out, '--init');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toContain(`catalogue: ${join(site, 'catalog.json')} (the pages folder's own)`);
    expect(r.stderr).toMatch(/^assets 3 · .* warnings 0 · errors 0/m);
    const list = JSON.parse(readFileSync(join(out, 'v1', 'assets', 'index.ultra.json'), 'utf8')).data;
    expect([list.asset_count, list.total_asset_count]).toEqual([3, 3]);
  });

  it("inspect --json prints one object per file with the readings under the API's names", () => {
    const site = join(cases, 'price-ends-before-projection');
    const r = run(
      'inspect',
      '--json',
      '--catalog',
      join(site, 'catalog.json'),
      join(site, 'BTC_Price_TWAP_Gravity_Analysis.html'),
      join(site, 'BTC_Price_TWAP_Risk_Analysis.html'),
      join(site, 'spy_lin_reg_price_with_risk.html'),
      join(site, 'widget_markets_indicators.html'),
    );
    expect(r.status).toBe(0);
    const items = JSON.parse(r.stdout);
    expect(items.map((i: { file: string; kind: string; symbol: string }) => [i.file, i.kind, i.symbol])).toEqual([
      ['BTC_Price_TWAP_Gravity_Analysis.html', 'crypto_gravity', 'BTC'],
      ['BTC_Price_TWAP_Risk_Analysis.html', 'crypto_twap_risk', 'BTC'],
      ['spy_lin_reg_price_with_risk.html', 'dca_regression', 'SPY'],
      ['widget_markets_indicators.html', 'sector_widget', null],
    ]);
    expect(items[0].gravity).toMatchObject({ as_of: '2026-10-13T23:58:00Z', as_of_basis: 'page_stamp' });
    expect(typeof items[0].gravity.score).toBe('number');
    expect(typeof items[0].twap.premium_pct).toBe('number');
    expect(typeof items[0].price.value).toBe('number');
    expect(items[1].twap.risk_level).toBeGreaterThanOrEqual(1);
    expect(items[2].dca.floor).toBeGreaterThan(0);
    expect(items[3]).toMatchObject({ universe: 'us_stock_market', macro_risk: { as_of: '2026-10-13', as_of_basis: 'page_stamp' } });
  });

  it('inspect names the field of a page it cannot read and exits 1', () => {
    const site = join(cases, 'stamp-missing');
    const r = run('inspect', '--json', '--catalog', join(site, 'catalog.json'), join(site, 'btc-usd_price_with_risk.html'));
    expect(r.status).toBe(1);
    expect(JSON.parse(r.stdout)[0].error).toEqual({
      field: 'stamp "LAST UPDATE"',
      found: 'no stamp on the page',
      message: 'btc-usd_price_with_risk.html: stamp "LAST UPDATE": no stamp on the page',
    });
  });

  it('build exits 0 and check says ok; a bad page exits 1; bad usage exits 2', () => {
    const out = join(root, 'pub');
    const ok = run(
      'build',
      '--pages',
      join(cases, 'card-not-printed'),
      '--out',
      out,
      '--init',
      '--catalog',
      join(cases, 'card-not-printed', 'catalog.json'),
      '--now',
      '2026-10-14T00:30:00Z',
    );
    expect(ok.status, ok.stderr).toBe(0);
    // Progress and the summary go to stderr (decision 27): stdout is kept for `--json`.
    expect(ok.stdout).toBe('');
    expect(ok.stderr).toMatch(new RegExp(`^assets 3 · pages ${sitePages(join(cases, 'card-not-printed'))} `));
    expect(ok.stderr).toContain(
      'sector source: ai_infrastructure ← sector_feed.json, bitcoin_equities ← widget_bitcoin_equities_indicators.html',
    );
    expect(run('check', '--out', out).stdout).toBe('ok\n');
    const bad = run(
      'build',
      '--pages',
      join(cases, 'number-does-not-parse'),
      '--out',
      out,
      '--catalog',
      join(cases, 'number-does-not-parse', 'catalog.json'),
    );
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain(
      'error: BTC_Price_TWAP_Gravity_Analysis.html: card "Lifetime TWAP Base": expected a printed number, found "$16,7x0"',
    );
    expect(run('check', '--out', out).stdout).toBe('ok\n');
    expect(run('build', '--pages', join(cases, 'card-not-printed')).status).toBe(2);
    expect(run('build', '--pages', join(cases, 'card-not-printed'), '--out', out, '--jobs', 'many').status).toBe(2);
    expect(run('frobnicate').status).toBe(2);
    expect(run('check', '--out', join(root, 'nothing-here')).status).toBe(2);
  });

  it('keys add prints a new key alone and stores only its SHA-256 with the plan', async () => {
    const file = join(root, 'keys.json');
    const a = run('keys', 'add', '--plan', 'pro', '--keys', file, '--label', 'ci');
    const b = run('keys', 'add', '--plan', 'basic', '--keys', file);
    expect(a.status, a.stderr).toBe(0);
    const key = a.stdout.trim();
    expect(a.stdout).toMatch(/^rr_[A-Za-z0-9_-]{32}\n$/);
    const { createHash } = await import('node:crypto');
    const { readFileSync } = await import('node:fs');
    const text = readFileSync(file, 'utf8');
    expect(text).not.toContain(key);
    const created = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(JSON.parse(text).keys).toEqual([
      { sha256: createHash('sha256').update(key).digest('hex'), plan: 'pro', label: 'ci', created },
      { sha256: createHash('sha256').update(b.stdout.trim()).digest('hex'), plan: 'basic', label: '', created },
    ]);
    expect(run('keys', 'add', '--plan', 'gold', '--keys', file).status).toBe(2);
  });

  it('keys list shows label, plan, hash prefix and created, never a key; keys revoke by label or prefix', async () => {
    const file = join(root, 'keys-list.json');
    const k1 = run('keys', 'add', '--plan', 'pro', '--keys', file, '--label', 'acme').stdout.trim();
    run('keys', 'add', '--plan', 'ultra', '--keys', file, '--label', 'acme');
    const k3 = run('keys', 'add', '--plan', 'basic', '--keys', file, '--label', 'solo').stdout.trim();
    const list = run('keys', 'list', '--keys', file, '--json');
    expect(list.status).toBe(0);
    const rows = JSON.parse(list.stdout);
    expect(rows.map((r: { label: string; plan: string }) => [r.label, r.plan])).toEqual([
      ['acme', 'pro'],
      ['acme', 'ultra'],
      ['solo', 'basic'],
    ]);
    expect(rows.every((r: { sha256_prefix: string; created: string }) => /^[0-9a-f]{8}$/.test(r.sha256_prefix) && !!r.created)).toBe(true);
    const human = run('keys', 'list', '--keys', file).stdout;
    for (const k of [k1, k3]) expect(human).not.toContain(k);
    const { createHash } = await import('node:crypto');
    const prefix = createHash('sha256').update(k3).digest('hex').slice(0, 10);
    expect(run('keys', 'revoke', '--keys', file, '--sha256', prefix).stdout).toBe(`revoked ${prefix.slice(0, 8)} basic solo\n`);
    expect(run('keys', 'revoke', '--keys', file, '--label', 'acme').stdout.split('\n').filter(Boolean)).toHaveLength(2);
    expect(JSON.parse(run('keys', 'list', '--keys', file, '--json').stdout)).toEqual([]);
    const none = run('keys', 'revoke', '--keys', file, '--label', 'acme');
    expect(none.status).toBe(1);
    expect(none.stderr).toContain('no key is labelled "acme"');
    expect(run('keys', 'revoke', '--keys', file).status).toBe(2);
  });

  it('keys commands on a malformed key file name the file and exit 1, never a stack', () => {
    const file = join(root, 'broken-keys.json');
    writeFileSync(file, '{"keys": [{"sha256": "nothex", "plan": "pro"}]}');
    for (const args of [['add', '--plan', 'pro'], ['list'], ['revoke', '--label', 'x']]) {
      const r = run('keys', ...args, '--keys', file);
      expect(r.status).toBe(1);
      expect(r.stderr).toBe(`risk-readings keys: ${file}: keys[0].sha256: expected 64 lower-case hex digits\n`);
    }
  });

  it('exits cleanly when its reader stops early', () => {
    const site = join(cases, 'card-not-printed');
    // Far more output than a pipe holds, so the writer meets the closed end.
    const page = `"${join(site, 'BTC_Price_TWAP_Gravity_Analysis.html')}" `.repeat(300);
    const r = spawnSync(
      'bash',
      [
        '-c',
        `"${process.execPath}" "${BIN}" inspect --catalog "${join(site, 'catalog.json')}" ${page} | head -c 1 > /dev/null; echo "\${PIPESTATUS[0]}"`,
      ],
      { encoding: 'utf8' },
    );
    expect(r.stderr).not.toContain('EPIPE');
    expect(r.stdout.trim()).toBe('0');
  });

  it('fixtures writes a site', () => {
    const r = run('fixtures', '--out', join(root, 'site'), '--assets', '2', '--history-start', '2026-03-01');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^wrote \d+ pages for 2 assets \(day 1\)/);
    expect(existsSync(join(root, 'site', 'BTC_Price_TWAP_Gravity_Analysis.html'))).toBe(true);
  });

  it('--version prints the package version', () => {
    const r = run('--version');
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toBe(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version);
  });

  it('bad values name the option and what was expected, exit 2, never a TypeError', () => {
    const cases: [string[], RegExp][] = [
      [
        ['fixtures', '--out', join(root, 'x'), '--history-start', '2026-99-01'],
        /--history-start takes a date YYYY-MM-DD, not "2026-99-01"/,
      ],
      [['build', '--pages', root, '--out', join(root, 'x'), '--now', 'yesterday'], /--now takes an ISO 8601 time/],
      [['build', '--pages', root, '--out', join(root, 'x'), '--public-url', 'ftp://x'], /--public-url takes an http\(s\) URL/],
      [['serve', '--public', root, '--stale-after', 'soon'], /--stale-after takes a duration such as 36h/],
      [['serve', '--public', root, '--log-level', 'loud'], /--log-level is one of fatal, error, warn, info, debug, trace, silent/],
      [
        ['serve', '--public', root, '--cors-origin', 'https://dash.example.com', '--cors-origin', 'https://dash.example.com/app'],
        /--cors-origin takes an origin scheme:\/\/host\[:port\] with no path, such as https:\/\/dash\.example\.com, or \*, not "https:\/\/dash\.example\.com\/app"/,
      ],
      [['check'], /check: --public <dir> is required/],
    ];
    for (const [args, message] of cases) {
      const r = run(...args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(message);
      expect(r.stderr).not.toMatch(/TypeError|Cannot read properties|\n\s+at /);
    }
  });

  it('one path rule in every command: a path that is not there, or not the kind it takes, is exit 2 naming both, before anything runs', () => {
    const dir = join(root, 'path-rule');
    mkdirSync(dir, { recursive: true });
    const [file, folder, none] = [join(dir, 'a-file'), join(dir, 'a-folder'), join(dir, 'absent')];
    writeFileSync(file, '{}');
    mkdirSync(folder, { recursive: true });
    const nested = join(none, 'keys.json');
    const rules: [string[], string][] = [
      [['check', '--public', none], `--public ${none}: no such folder`],
      [['check', '--public', file], `--public ${file}: not a folder`],
      [['check', '--out', none], `--out ${none}: no such folder`],
      [['serve', '--public', none], `--public ${none}: no such folder`],
      [['serve', '--public', file], `--public ${file}: not a folder`],
      [['serve', '--public', folder, '--keys', none], `--keys ${none}: no such file`],
      [['serve', '--public', folder, '--keys', folder], `--keys ${folder}: not a file`],
      [
        ['serve', '--public', folder, '--quotas', join(none, 'q.json')],
        `--quotas ${join(none, 'q.json')}: no such folder ${none} to write it in`,
      ],
      [['serve', '--public', folder, '--quotas', folder], `--quotas ${folder}: not a file`],
      [['serve', '--public', folder, '--marketplace-secret-file', folder], `--marketplace-secret-file ${folder}: not a file`],
      [['preview', '--public', none], `--public ${none}: no such folder`],
      [['preview', '--public', file], `--public ${file}: not a folder`],
      [['diff', none, folder], `OLD ${none}: no such folder`],
      [['diff', folder, none], `OLD ${folder}: holds no v1/, no built tree; pass the folder a build's --out wrote v1/ into`],
      [['inspect', file, none], `FILE ${none}: no such file`],
      [['inspect', folder], `FILE ${folder}: not a file`],
      [['inspect', '--catalog', none, file], `--catalog ${none}: no such file`],
      [['keys', 'list', '--keys', none], `--keys ${none}: no such file (keys add creates one)`],
      [['keys', 'list', '--keys', folder], `--keys ${folder}: not a file`],
      [['keys', 'revoke', '--keys', none, '--label', 'x'], `--keys ${none}: no such file (keys add creates one)`],
      [['keys', 'roll', '--keys', none, '--label', 'x'], `--keys ${none}: no such file (keys add creates one)`],
      [['keys', 'add', '--plan', 'pro', '--keys', nested], `--keys ${nested}: no such folder ${none} to write it in`],
      [['keys', 'add', '--plan', 'pro', '--keys', folder], `--keys ${folder}: not a file`],
      [['fixtures', '--out', join(dir, 'site'), '--catalog', none], `--catalog ${none}: no such file`],
      [['build', '--pages', folder, '--out', join(dir, 'out'), '--catalog', none], `--catalog ${none}: no such file`],
      [['build', '--pages', folder, '--out', join(dir, 'out'), '--catalog', folder], `--catalog ${folder}: not a file`],
    ];
    for (const [args, message] of rules) {
      const r = run(...args);
      expect([r.status, r.stdout, r.stderr], args.join(' ')).toEqual([2, '', `risk-readings: ${message}\n`]);
    }
    // The environment's quota store is held to the same rule as --quotas.
    const env = spawnSync(process.execPath, [BIN, 'serve', '--public', folder], {
      encoding: 'utf8',
      env: { ...process.env, RISK_READINGS_QUOTAS: join(none, 'q.json') },
    });
    expect([env.status, env.stderr]).toEqual([
      2,
      `risk-readings: RISK_READINGS_QUOTAS ${join(none, 'q.json')}: no such folder ${none} to write it in\n`,
    ]);
    // Nothing ran: no quota lock, no key file, no site, nothing made anywhere.
    expect(readdirSync(dir).sort()).toEqual(['a-file', 'a-folder']);
    expect(readdirSync(folder)).toEqual([]);
    // keys add creates a key file that is not there yet, in a folder that is.
    expect(run('keys', 'add', '--plan', 'pro', '--keys', join(folder, 'new.json')).status).toBe(0);
  });

  it('one exit rule: 2 for a path or value the command got wrong, 3 for the machine (a busy port), each named', async () => {
    const file = join(root, 'a-file.txt');
    writeFileSync(file, 'not a folder');
    const pages = join(cases, 'card-not-printed');
    const expectations: [string[], number, string][] = [
      [['build', '--pages', file, '--out', join(root, 'o1')], 2, `build failed: --pages ${file}: not a folder`],
      [['build', '--pages', join(root, 'absent'), '--out', join(root, 'o2')], 2, `--pages ${join(root, 'absent')}: no such folder`],
      [['build', '--pages', pages, '--out', file, '--init'], 2, `build failed: --out ${file}: not a folder`],
      // A --previous that is no folder is a typo, never "no previous tree" (1) nor the machine (3), --init or not; a
      // URL is no path.
      [['build', '--pages', pages, '--out', join(root, 'o3'), '--previous', file], 2, `build failed: --previous ${file}: not a folder`],
      [
        ['build', '--pages', pages, '--out', join(root, 'o3'), '--previous', join(root, 'absent')],
        2,
        `build failed: --previous ${join(root, 'absent')}: no such folder`,
      ],
      [
        ['build', '--pages', pages, '--out', join(root, 'o3'), '--previous', join(root, 'nope', 'prev'), '--init'],
        2,
        `build failed: --previous ${join(root, 'nope', 'prev')}: no such folder`,
      ],
      [
        ['build', '--pages', pages, '--out', join(root, 'o3'), '--previous', join(file, 'prev')],
        2,
        `build failed: --previous ${join(file, 'prev')}: no such folder`,
      ],
      // An --out holding no tree is still decision 27's "no previous tree" without --init: the input, exit 1.
      [['build', '--pages', pages, '--out', join(root, 'o3')], 1, `build failed: no previous tree at ${join(root, 'o3')}`],
      [
        ['build', '--pages', pages, '--out', join(root, 'o4'), '--init', '--catalog', file],
        1,
        `build failed: ${file}: cannot read the catalogue (`,
      ],
      [
        ['keys', 'list', '--keys', join(root, 'absent-keys.json')],
        2,
        `--keys ${join(root, 'absent-keys.json')}: no such file (keys add creates one)`,
      ],
      [['keys', 'revoke', '--keys', join(root, 'absent-keys.json'), '--label', 'x'], 2, 'no such file (keys add creates one)'],
      [['serve', '--public', root, '--port', '99999'], 2, '--port takes a port from 1 to 65535, not "99999"'],
    ];
    for (const [args, status, message] of expectations) {
      const r = run(...args);
      expect(r.status, args.join(' ')).toBe(status);
      expect(r.stderr, args.join(' ')).toContain(message);
    }
    // Refused before anything ran: no output folder was made for them.
    expect(existsSync(join(root, 'o3'))).toBe(false);
    const tree = join(root, 'diff-tree');
    expect(
      run(
        'build',
        '--pages',
        join(cases, 'missing-model-page'),
        '--out',
        tree,
        '--init',
        '--catalog',
        join(cases, 'missing-model-page', 'catalog.json'),
      ).status,
    ).toBe(0);
    expect([run('diff', tree, file).status, run('diff', tree, file).stderr]).toEqual([2, `risk-readings: NEW ${file}: not a folder\n`]);
    const unknown = run('diff', tree, tree, '--asset', 'NOPE');
    expect([unknown.status, unknown.stderr]).toEqual([2, 'risk-readings diff: --asset NOPE: neither tree holds that asset\n']);
    // A port another process holds: the machine's state, exit 3 naming the port.
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', () => resolve()));
    const busy = String((holder.address() as { port: number }).port);
    try {
      const r = run('serve', '--public', tree, '--port', busy, '--quotas', 'memory');
      expect([r.status, r.stderr.trim()]).toEqual([3, `risk-readings serve: --port ${busy} on 127.0.0.1: already in use`]);
    } finally {
      holder.close();
    }
  });

  it('check takes --public like serve and preview; --out still works, with a deprecation note', () => {
    const empty = join(root, 'empty-tree');
    mkdirSync(empty, { recursive: true });
    for (const [flag, note] of [
      ['--public', false],
      ['--out', true],
    ] as const) {
      const r = run('check', flag, empty);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(
        `risk-readings: ${flag} ${empty}: holds no v1/, no built tree; pass the folder a build's --out wrote v1/ into`,
      );
      expect(r.stderr.includes('check --out is deprecated; use --public')).toBe(note);
    }
  });

  it("check, serve and preview given a tree's own folder (…/v1), or one holding no tree: exit 2 naming the folder to pass", () => {
    const out = join(root, 'tree-folder');
    const site = join(cases, 'missing-model-page');
    expect(run('build', '--pages', site, '--out', out, '--init', '--catalog', join(site, 'catalog.json')).status).toBe(0);
    const v1 = join(out, 'v1');
    const own = realpathSync(v1);
    const empty = join(root, 'tree-folder-empty');
    mkdirSync(empty, { recursive: true });
    for (const command of ['check', 'serve', 'preview']) {
      const port = command === 'check' ? [] : ['--port', '1'];
      for (const [given, message] of [
        [v1, `${v1}: a tree's own folder (it holds _manifest.json), not the folder holding v1/; pass ${out}`],
        [own, `${own}: a tree's own folder (it holds _manifest.json), not the folder holding v1/; pass ${out}`],
        [empty, `${empty}: holds no v1/, no built tree; pass the folder a build's --out wrote v1/ into`],
      ]) {
        const r = run(command, '--public', given!, ...port);
        expect([r.status, r.stdout, r.stderr], `${command} ${given}`).toEqual([2, '', `risk-readings: --public ${message}\n`]);
      }
    }
    expect(run('check', '--public', out).status).toBe(0);
  });

  it('a secret on the command line is warned about; from a file or the environment it is not', () => {
    const empty = join(root, 'no-tree');
    mkdirSync(empty, { recursive: true });
    const onLine = run('serve', '--public', empty, '--marketplace-secret', 'shh-not-here');
    expect(onLine.stderr).toContain(
      'warning: --marketplace-secret on the command line is visible to other users in the process list; set RISK_READINGS_MARKETPLACE_SECRET or pass --marketplace-secret-file instead',
    );
    const secretFile = join(root, 'secret');
    writeFileSync(secretFile, 'shh\n');
    expect(run('serve', '--public', empty, '--marketplace-secret-file', secretFile).stderr).not.toContain('warning');
    const missing = run('serve', '--public', empty, '--marketplace-secret-file', join(root, 'absent'));
    expect(missing.status).toBe(2);
    expect(missing.stderr).toBe(`risk-readings: --marketplace-secret-file ${join(root, 'absent')}: no such file\n`);
    expect(run('serve', '--public', empty, '--quotas', 'redis://:pw@127.0.0.1:1').stderr).toContain(
      'warning: a password in --quotas on the command line',
    );
  });
});
