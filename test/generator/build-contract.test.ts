/**
 * The build's contract with its pipeline (decision 27), each case a real `risk-readings build` child process on
 * real files: exit statuses, the ledger never started by accident, continued from a folder or a URL, pages that
 * vanish, one writer at a time, the environment's failures named, and the report as data.
 */
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statfsSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import handler from 'serve-handler';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { build } from '../../generator/build.js';
import { checkTree } from '../../generator/check.js';
import { acquireLock } from '../../generator/output/lock.js';
import { cli, cliAsync, readJson, sitePages, smallSite, tempDir, treeHashes, until } from '../helpers.js';

const root = tempDir('rr-contract-');
const SYMBOLS = ['BTC', 'AERO', 'SPY'];
const day = (n: number) => join(root, `day${n}`);
const pristine = join(root, 'pristine');
const NOW = (n: number) => `2026-10-${13 + n}T00:30:00Z`;
const args = (pages: string, out: string, n: number, ...more: string[]) => [
  'build',
  '--pages',
  pages,
  '--out',
  out,
  '--catalog',
  join(day(1), 'catalog.json'),
  '--now',
  NOW(n),
  ...more,
];
const rows = (dir: string, s: string) =>
  readJson(join(dir, 'v1', 'assets', s, 'history', 'full.json')).data.rows as { date: string; basis: string }[];

/** A fresh copy of the day-1 tree. */
function copyOfDay1(name: string): string {
  const dir = join(root, name);
  rmSync(dir, { recursive: true, force: true });
  cpSync(pristine, dir, { recursive: true, verbatimSymlinks: true });
  return dir;
}

beforeAll(async () => {
  for (const n of [1, 2, 3]) await smallSite(day(n), n, '2026-03-01', SYMBOLS);
  await build({ pages: day(1), out: pristine, catalog: join(day(1), 'catalog.json'), now: NOW(1), init: true });
});

describe('the ledger is never started by accident', () => {
  it('no previous tree: exit 1 naming --init and --previous, and nothing is created', () => {
    const out = join(root, 'fresh');
    const r = cli(args(day(1), out, 1));
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/no previous tree at .*fresh: its history ledger would start over/);
    expect(r.stderr).toMatch(/--init/);
    expect(existsSync(out)).toBe(false);
    expect(cli(args(day(1), out, 1, '--init')).status).toBe(0);
  });

  it('a previous tree that fails its own manifest check is exit 1, not a fresh start', () => {
    const out = copyOfDay1('tampered');
    const file = join(out, 'v1', 'assets', 'BTC', 'history', 'full.json');
    writeFileSync(file, readFileSync(file, 'utf8').replace('"as_published"', '"as_published" '));
    const before = treeHashes(out);
    const r = cli(args(day(2), out, 2, '--init'));
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('assets/BTC/history/full.json does not match _manifest.json');
    expect(treeHashes(out)).toEqual(before);
  });
});

describe('--init never drops a published tree', () => {
  it('over an --out holding a published ledger: exit 2 naming it and how to start over; the tree byte-identical', () => {
    const out = copyOfDay1('init-over-out');
    const before = treeHashes(out);
    const r = cli(args(day(2), out, 2, '--init', '--json'));
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--init: --out .*init-over-out already holds a published ledger \(\d+ history rows of 3 assets\)/);
    expect(r.stderr).toContain('To continue that ledger, build without --init');
    expect(r.stderr).toMatch(/build into an empty --out, or move .*init-over-out\/v1 and .*init-over-out\/\.trees aside first/);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'failed', exit_code: 2 });
    expect(treeHashes(out)).toEqual(before);
    // Without --init the same build continues the ledger.
    expect(cli(args(day(2), out, 2)).status).toBe(0);
  });

  it('with a --previous folder holding one: exit 2 naming --previous, and nothing is created in --out', () => {
    const out = join(root, 'init-fresh-out');
    const r = cli(args(day(2), out, 2, '--init', '--previous', pristine));
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--init: --previous .*pristine already holds a published ledger/);
    expect(r.stderr).toContain('leave out --previous and build into an empty --out');
    expect(existsSync(join(out, 'v1'))).toBe(false);
  });
});

describe('nothing published quietly turns null', () => {
  it('an empty pages folder over a good tree: exit 1, the tree byte-identical', () => {
    const out = copyOfDay1('empty-pages');
    const empty = join(root, 'no-pages');
    mkdirSync(empty, { recursive: true });
    const before = treeHashes(out);
    const r = cli(args(empty, out, 2));
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/no pages at all/);
    expect(treeHashes(out)).toEqual(before);
  });

  it('a partial pages folder: exit 1 naming every missing page, counted per kind; the tree byte-identical', () => {
    const out = copyOfDay1('partial');
    const pages = join(root, 'partial-pages');
    cpSync(day(2), pages, { recursive: true });
    for (const f of [
      'BTC_Price_TWAP_Gravity_Analysis.html',
      'AERO29270_Price_TWAP_Gravity_Analysis.html',
      'SPY_Composite_SMA_Risk.html',
      'crypto_risk_normalized.html',
    ])
      rmSync(join(pages, f));
    const before = treeHashes(out);
    const r = cli(args(pages, out, 2));
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(
      '4 page(s) the previous build read are missing (crypto_gravity 2, crypto_peak_valley 1, equity_sma_composite 1)',
    );
    for (const f of [
      'BTC_Price_TWAP_Gravity_Analysis.html',
      'AERO29270_Price_TWAP_Gravity_Analysis.html',
      'SPY_Composite_SMA_Risk.html',
      'crypto_risk_normalized.html',
    ]) {
      expect(r.stderr).toContain(`${f}: missing (the previous build read it)`);
    }
    expect(r.stderr).toContain(
      'with --keep-going: SPY_Composite_SMA_Risk.html (missing) would be carried: SPY would keep its previous equity_sma_composite reading',
    );
    expect(r.stderr).not.toMatch(/^carried:/m);
    // It published nothing, and says so of the ledger too.
    expect(r.stderr).toMatch(/^ledger: would continue from /m);
    expect(r.stderr).not.toContain('ledger: continued');
    expect(treeHashes(out)).toEqual(before);
  });

  it('--keep-going carries the previous readings with their own as_of, lists them, exits 4; the guard holds on the next build', () => {
    const out = copyOfDay1('carry');
    const pages = join(root, 'carry-pages');
    cpSync(day(2), pages, { recursive: true });
    rmSync(join(pages, 'BTC_Price_TWAP_Gravity_Analysis.html'));
    rmSync(join(pages, 'crypto_risk_normalized.html'));
    const old = readJson(join(out, 'v1', 'assets', 'BTC', 'risk.json')).data;
    const r = cli(args(pages, out, 2, '--keep-going', '--json'));
    expect(r.status, r.stderr).toBe(4);
    const report = JSON.parse(r.stdout);
    expect(report).toMatchObject({ status: 'published_with_carried', exit_code: 4 });
    expect(report.carried).toEqual([
      {
        file: 'BTC_Price_TWAP_Gravity_Analysis.html',
        kind: 'crypto_gravity',
        symbol: 'BTC',
        reason: 'missing',
        readings: ['gravity', 'twap', 'price'],
      },
      { file: 'crypto_risk_normalized.html', kind: 'crypto_peak_valley', symbol: null, reason: 'missing', readings: ['peak_valley'] },
    ]);
    const now = readJson(join(out, 'v1', 'assets', 'BTC', 'risk.json')).data;
    expect(now.gravity).toEqual(old.gravity);
    expect(now.twap.as_of).toBe(old.twap.as_of);
    expect(now.price).toEqual(old.price);
    expect(now.market_context.peak_valley).toEqual(old.market_context.peak_valley);
    expect(now.dca.as_of).not.toBe(old.dca.as_of);
    // Four days on, the carried readings are stale and say so.
    const later = cli(args(day(3), out, 5, '--keep-going'));
    expect(later.status).toBe(0);
    const again = cli(args(pages, out, 6, '--keep-going', '--json'));
    expect(again.status).toBe(4);
    const stale = readJson(join(out, 'v1', 'assets', 'BTC', 'risk.json')).data;
    expect(stale.gravity.as_of.slice(0, 10)).toBe('2026-10-15');
    // Without --keep-going the same missing pages still fail: carrying does not make the guard forget them.
    const strict = cli(args(pages, out, 6));
    expect(strict.status).toBe(1);
    expect(strict.stderr).toContain('BTC_Price_TWAP_Gravity_Analysis.html: missing');
  });
});

describe('the previous tree from a deployed URL', () => {
  let server: Server;
  let url = '';
  const served = copyOfDay1.bind(null);
  beforeAll(async () => {
    const dir = served('deployed');
    server = createServer((req, res) => {
      if (req.headers.authorization !== 'Bearer s3cret') {
        res.writeHead(401).end();
        return;
      }
      void handler(req, res, { public: dir, symlinks: true });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;
  });
  afterAll(() => new Promise((r) => server.close(r)));

  it('continues the ledger the origin serves, byte for byte, in a clean workspace', async () => {
    const local = copyOfDay1('local-continued');
    expect(cli(args(day(2), local, 2)).status).toBe(0);
    const fresh = join(root, 'clean-workspace');
    // Not spawnSync: the origin runs in this process and must keep answering.
    const r = await cliAsync(args(day(2), fresh, 2, '--previous', url, '--json'), { RISK_READINGS_PREVIOUS_TOKEN: 's3cret' });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).previous).toBe(`${url}v1/`);
    for (const s of SYMBOLS) {
      const path = join('v1', 'assets', s, 'history', 'full.json');
      expect(readFileSync(join(fresh, path), 'utf8')).toBe(readFileSync(join(local, path), 'utf8'));
    }
    expect(treeHashes(fresh)).toEqual(treeHashes(local));
  });

  it('a refused token is the environment (exit 3), a missing tree is no previous tree (exit 1)', async () => {
    const r = await cliAsync(args(day(2), join(root, 'no-token'), 2, '--previous', url), { RISK_READINGS_PREVIOUS_TOKEN: 'wrong' });
    expect(r.status).toBe(3);
    expect(r.stderr).toMatch(/_manifest\.json: the origin refused the request \(401\)/);
    const missing = await cliAsync(args(day(2), join(root, 'no-tree'), 2, '--previous', `${url}elsewhere/`), {
      RISK_READINGS_PREVIOUS_TOKEN: 's3cret',
    });
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/no previous tree at/);
  });

  it('--init with a --previous URL that answers 404 (a typo) never replaces the tree in --out: exit 2, untouched', async () => {
    const out = copyOfDay1('init-typo');
    const before = treeHashes(out);
    const env = { RISK_READINGS_PREVIOUS_TOKEN: 's3cret' };
    const r = await cliAsync(args(day(2), out, 2, '--init', '--previous', `${url}typo/`), env);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--init: --out .*init-typo already holds a published ledger/);
    expect(treeHashes(out)).toEqual(before);
    // Into an empty --out, the same command is a new ledger on purpose: there is no history anywhere it can see.
    const fresh = await cliAsync(args(day(2), join(root, 'init-typo-fresh'), 2, '--init', '--previous', `${url}typo/`), env);
    expect(fresh.status, fresh.stderr).toBe(0);
    expect(fresh.stderr).toContain('ledger: started new (--init)');
  });
});

describe('one writer', () => {
  it('a second build while one holds the output exits 3 at once naming the holder; nothing of either is lost', async () => {
    const out = copyOfDay1('two-at-once');
    // The first holds the output, once it has taken it, until the second has ended (or a guard lets it go on).
    const release = join(root, 'two-at-once.release');
    const first = cliAsync(args(day(2), out, 2), { RR_FAULT_OUT: out, RR_FAULT_HOLD_LOCK_UNTIL: release }, true);
    const guard = setTimeout(() => writeFileSync(release, 'guard'), 120_000);
    try {
      const lock = join(out, '.lock');
      expect(await until(() => existsSync(lock) && readFileSync(lock, 'utf8').includes('"pid"'))).toBe(true);
      const holder = JSON.parse(readFileSync(lock, 'utf8'));
      const second = await cliAsync(args(day(3), out, 3));
      // At once: it ended while the first still held the output, not after waiting for it.
      expect(existsSync(release), 'the second ended only once the guard let the first go on').toBe(false);
      expect(second.status, second.stderr).toBe(3);
      expect(second.stderr).toContain(`another build holds the output (pid ${holder.pid}`);
    } finally {
      clearTimeout(guard);
      writeFileSync(release, 'released');
    }
    expect((await first).status).toBe(0);
    expect(rows(out, 'BTC').at(-1)!.date).toBe('2026-10-14');
    expect(cli(args(day(3), out, 3)).status).toBe(0);
    const all = rows(out, 'BTC');
    expect(all.slice(0, rows(pristine, 'BTC').length)).toEqual(rows(pristine, 'BTC'));
    expect(all.slice(-3).map((r) => r.date)).toEqual(['2026-10-13', '2026-10-14', '2026-10-15']);
  });

  it('a lock whose holder is dead is taken over at once', async () => {
    const out = copyOfDay1('stale-lock');
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    writeFileSync(
      join(out, '.lock'),
      JSON.stringify({
        pid: Number(dead.stdout),
        host: (await import('node:os')).hostname(),
        started: '2026-10-14T00:00:00Z',
        proc_start: null,
        command: 'killed',
      }),
    );
    const r = cli(args(day(2), out, 2));
    expect(r.status, r.stderr).toBe(0);
    expect(existsSync(join(out, '.lock'))).toBe(false);
  });

  it('a lock copied with a tree from where a live process holds it is not held here; one moved with it is', async () => {
    const held = copyOfDay1('held-elsewhere');
    const out = copyOfDay1('copied-lock');
    const lock = await acquireLock(held, 'a build of the other tree');
    try {
      cpSync(join(held, '.lock'), join(out, '.lock'));
      const r = cli(args(day(2), out, 2));
      expect(r.status, r.stderr).toBe(0);
      expect(existsSync(join(out, '.lock'))).toBe(false);
      expect(existsSync(join(held, '.lock'))).toBe(true);
      // The held tree renamed while its holder runs: the lock moved with it, and still holds.
      renameSync(held, `${held}-moved`);
      const moved = cli(args(day(2), `${held}-moved`, 2));
      expect(moved.status).toBe(3);
      expect(moved.stderr).toContain('a build of the other tree');
      renameSync(`${held}-moved`, held);
    } finally {
      await lock.release();
    }
  });

  it('the lock is held by a live process: exit 3, and the tree is untouched', async () => {
    const out = copyOfDay1('held');
    const lock = await acquireLock(out, 'a test holding the lock');
    try {
      const before = treeHashes(out);
      const r = cli(args(day(2), out, 2));
      expect(r.status).toBe(3);
      expect(r.stderr).toContain(`pid ${process.pid}`);
      expect(r.stderr).toContain('a test holding the lock');
      expect(treeHashes(out)).toEqual(before);
    } finally {
      await lock.release();
    }
  });
});

describe('what killed builds left', () => {
  it('is removed by the next build and listed in its report', () => {
    const out = copyOfDay1('leftovers');
    mkdirSync(join(out, '.v1-staging-123', 'assets'), { recursive: true });
    mkdirSync(join(out, '.trees', '.staging-9-abc'), { recursive: true });
    mkdirSync(join(out, '.trees', '.trash-old-1'), { recursive: true });
    cpSync(realpathSync(join(out, 'v1')), join(out, '.trees', 'orphan'), { recursive: true });
    const r = cli(args(day(2), out, 2, '--json'));
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).tidied.sort()).toEqual([
      'removed .trees/.staging-9-abc',
      'removed .trees/.trash-old-1',
      'removed .trees/orphan',
      'removed .v1-staging-123',
    ]);
    expect(readdirSync(out).sort()).toEqual(['.risk-readings-cache.json', '.trees', 'v1']);
    expect(readdirSync(join(out, '.trees'))).toHaveLength(1);
  });
});

describe('the report is data', () => {
  it('--json prints one JSON object on stdout and the human summary on stderr; a failure is data too', () => {
    const out = copyOfDay1('json');
    const r = cli(args(day(2), out, 2, '--json'));
    expect(r.status).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(r.stdout.trim().split('\n')).toHaveLength(1);
    const pages = sitePages(day(2));
    expect(report).toMatchObject({
      status: 'published',
      exit_code: 0,
      assets: 3,
      pages_read: pages,
      errors: [],
      carried: [],
      previous: out,
    });
    expect(report.pages_parsed + report.pages_reused).toBe(pages);
    expect([report.pages_unreadable, report.would_carry]).toEqual([0, undefined]);
    expect(report.files_written).toBeGreaterThan(0);
    expect(report.relinked).toBe(false);
    expect(r.stderr).toMatch(new RegExp(`^assets 3 · pages ${pages} `));
    const broken = join(root, 'json-broken');
    cpSync(day(3), broken, { recursive: true });
    const f = join(broken, 'AERO29270_Price_TWAP_Gravity_Analysis.html');
    writeFileSync(
      f,
      readFileSync(f, 'utf8').replace(/(<p class="card-lbl">Lifetime TWAP Base<\/p>\s*<p class="card-val"[^>]*>)[^<]*/, '$1$$1,2x'),
    );
    const bad = cli(args(broken, out, 3, '--json'));
    expect(bad.status).toBe(1);
    const failed = JSON.parse(bad.stdout);
    expect(failed).toMatchObject({
      status: 'failed',
      exit_code: 1,
      errors: [expect.stringContaining('AERO29270_Price_TWAP_Gravity_Analysis.html: card "Lifetime TWAP Base"')],
      pages_read: sitePages(broken),
      pages_unreadable: 1,
      // It published nothing, so it carried nothing; what --keep-going would have carried is said as such.
      carried: [],
      would_carry: [
        {
          file: 'AERO29270_Price_TWAP_Gravity_Analysis.html',
          kind: 'crypto_gravity',
          symbol: 'AERO',
          reason: 'unreadable',
          readings: ['gravity', 'twap', 'price'],
        },
      ],
    });
    // Every page found is counted once: parsed, unchanged or unreadable.
    expect(failed.pages_parsed + failed.pages_reused + failed.pages_unreadable).toBe(failed.pages_read);
    expect(bad.stderr).toMatch(
      new RegExp(`^assets 3 · pages ${sitePages(broken)} \\(parsed \\d+, unchanged \\d+, unreadable 1\\) · .* · carried 0$`, 'm'),
    );
    expect(bad.stderr).not.toMatch(/^carried:/m);
    expect(bad.stderr).toContain(
      'with --keep-going: AERO29270_Price_TWAP_Gravity_Analysis.html (unreadable) would be carried: AERO would keep its previous crypto_gravity reading',
    );
    expect(bad.stderr).toContain('build failed:');
  });
});

/** A small tmpfs of our own, where the machine lets us mount one (root in a sandbox that allows it). */
function tmpfs(dir: string, size: string): string | null {
  mkdirSync(dir, { recursive: true });
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { encoding: 'utf8' });
  return r.status === 0 ? null : (r.stderr || r.error?.message || `mount exited ${r.status}`).trim();
}
const probe = join(root, 'probe-mount');
const cannotMount = tmpfs(probe, '1m');
if (!cannotMount) spawnSync('umount', [probe]);

describe.skipIf(cannotMount !== null)(
  `the environment's failures are named (skipped where no tmpfs can be mounted: ${cannotMount ?? 'it can'})`,
  () => {
    const mounts: string[] = [];
    afterAll(() => {
      for (const m of mounts) spawnSync('umount', ['-l', m]);
    });

    /** The day-1 tree on a filesystem of `size`, filled until `free` bytes are left. */
    function day1On(name: string, size: string): string {
      const mnt = join(root, name);
      expect(tmpfs(mnt, size)).toBeNull();
      mounts.push(mnt);
      cpSync(pristine, join(mnt, 'out'), { recursive: true, verbatimSymlinks: true });
      return join(mnt, 'out');
    }

    it('disk full: exit 3 naming the path and the cause; the old tree untouched and no staging left', () => {
      const out = day1On('full', '4m');
      // What is free as the filesystem counts it (whole pages a file), not the bytes the tree's files hold: those fall
      // short by a page's rest for each file, about as much as the room left here.
      const { bavail, bsize } = statfsSync(out);
      writeFileSync(join(out, '..', 'filler'), Buffer.alloc(Math.max(0, bavail * bsize - 160 * 1024)));
      const before = treeHashes(out);
      const r = cli(args(day(2), out, 2));
      expect(r.status, r.stderr).toBe(3);
      expect(r.stderr).toMatch(new RegExp(`${out}/\\S+: disk full \\(ENOSPC`));
      expect(treeHashes(out)).toEqual(before);
      expect(readdirSync(join(out, '.trees'))).toHaveLength(1);
      expect(readdirSync(out).filter((n) => n.startsWith('.v1-') || n === '.lock')).toEqual([]);
    });

    it('a read-only --out: exit 3 naming the path and the cause, nothing changed', async () => {
      const out = day1On('readonly', '8m');
      expect(spawnSync('mount', ['-o', 'remount,ro', join(out, '..')]).status).toBe(0);
      const before = treeHashes(out);
      const r = cli(args(day(2), out, 2));
      expect(r.status).toBe(3);
      expect(r.stderr).toMatch(/read-only file system \(EROFS/);
      expect(r.stderr).toContain(out);
      expect(treeHashes(out)).toEqual(before);
      expect(await checkTree(out)).toEqual([]);
    });
  },
);
