/**
 * No window: a build killed with SIGKILL after each of its operations on `--out` (every rename, link, symlink,
 * rm and unlink, one kill per run, until a run completes) leaves a tree that `check` passes and `serve` answers,
 * and the next build loses and changes no published row.
 */
import { cpSync, existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { build } from '../../../generator/build.js';
import { checkTree } from '../../../generator/check.js';
import { startServer } from '../../../auth-shim/node/server.js';
import { cli, readJson, smallSite, tempDir } from '../../helpers.js';

const root = tempDir('rr-crash-');
const SYMBOLS = ['BTC', 'AERO', 'SPY'];
const day = (n: number) => join(root, `day${n}`);
const pristine = join(root, 'pristine');
const out = join(root, 'out');
const DAY2_NOW = '2026-10-15T00:30:00Z';
const ledgerRows = (dir: string, s: string) =>
  readJson(join(dir, 'v1', 'assets', s, 'history', 'full.json')).data.rows as { date: string }[];

beforeAll(async () => {
  for (const n of [1, 2]) await smallSite(day(n), n, '2026-03-01', SYMBOLS);
  await build({ pages: day(1), out: pristine, catalog: join(day(1), 'catalog.json'), now: '2026-10-14T00:30:00Z', init: true });
});

const restore = () => {
  rmSync(out, { recursive: true, force: true });
  cpSync(pristine, out, { recursive: true, verbatimSymlinks: true });
};

async function serves(dir: string): Promise<number> {
  const { server, url } = await startServer({ publicDir: dir, port: 0, watchMs: 0 });
  try {
    return (await fetch(`${url}/v1/health`)).status;
  } finally {
    await new Promise((r) => server.close(r));
  }
}

describe('a build killed after any operation on --out', () => {
  it('always leaves a servable tree, and the next build keeps every published row', async () => {
    const before = new Map(SYMBOLS.map((s) => [s, ledgerRows(pristine, s)]));
    const countFile = join(root, 'count');
    let kills = 0;
    for (let k = 1; k < 200; k++) {
      restore();
      const r = cli(
        ['build', '--pages', day(2), '--out', out, '--catalog', join(day(2), 'catalog.json'), '--now', DAY2_NOW],
        { RR_FAULT_OUT: out, RR_FAULT_KILL_AFTER: String(k), RR_FAULT_COUNT_FILE: countFile },
        true,
      );
      if (r.signal !== 'SIGKILL') {
        expect(r.status, r.stderr).toBe(0);
        expect(Number(readFileSync(countFile, 'utf8'))).toBe(k - 1);
        break;
      }
      kills++;
      expect(await checkTree(out), `after a kill at operation ${k}`).toEqual([]);
      expect(await serves(out), `serve after a kill at operation ${k}`).toBe(200);
      const next = await build({ pages: day(2), out, catalog: join(day(2), 'catalog.json'), now: DAY2_NOW });
      expect(next.errors).toEqual([]);
      for (const s of SYMBOLS) {
        const rows = ledgerRows(out, s);
        expect(rows.slice(0, before.get(s)!.length), `${s} after a kill at operation ${k}`).toEqual(before.get(s));
        expect(rows.at(-1)!.date >= before.get(s)!.at(-1)!.date).toBe(true);
      }
      // What the killed build left is gone: one tree, no staging, no stray link, no lock.
      expect(readdirSync(join(out, '.trees'))).toHaveLength(1);
      expect(readdirSync(out).filter((n) => n.startsWith('.v1-') || n === '.lock')).toEqual([]);
    }
    expect(kills).toBeGreaterThanOrEqual(5);
  });

  it('a first-layout tree killed mid-swap (no v1, the old tree set aside) is served and continued, not restarted', async () => {
    restore();
    // The first release renamed v1/ aside, then renamed staging in: killed between, only `.v1-old-<pid>` is left.
    const target = join(out, readdirSync(join(out, '.trees'))[0]!.replace(/^/, '.trees/'));
    rmSync(join(out, 'v1'));
    cpSync(target, join(out, '.v1-old-4242'), { recursive: true });
    rmSync(join(out, '.trees'), { recursive: true });
    expect(existsSync(join(out, 'v1'))).toBe(false);
    expect(await checkTree(out)).toEqual([]);
    expect(await serves(out)).toBe(200);
    const report = await build({ pages: day(2), out, catalog: join(day(2), 'catalog.json'), now: DAY2_NOW });
    expect(report.previous).toBe(out);
    expect(report.tidied.some((t) => t.startsWith('recovered'))).toBe(true);
    for (const s of SYMBOLS) expect(ledgerRows(out, s).slice(0, ledgerRows(pristine, s).length)).toEqual(ledgerRows(pristine, s));
    expect(readdirSync(out).filter((n) => n.startsWith('.v1-'))).toEqual([]);
  });
});
