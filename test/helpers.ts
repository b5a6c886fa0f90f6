/** Shared test fixtures: temporary folders, synthetic sites, and builds. */
import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { atEnd } from './at-end.js';
import { loadCatalog, type Asset } from '../generator/catalog/catalog.js';
import { writeSite } from '../fixtures/synth/site.js';
import { build, type BuildOptions } from '../generator/build.js';
import { sha256 } from '../generator/output/manifest.js';
import { classify } from '../generator/site/discover.js';

export const ROOT = join(import.meta.dirname, '..');
export const CATALOG: Asset[] = loadCatalog();

/** A temporary folder removed when the test that made it ends, or, made outside a test, when the test file ends. */
export function tempDir(prefix = 'rr-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  atEnd(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Assets that between them carry every page kind and markup variant. */
export const SMALL = ['BTC', 'ETH', 'AERO', 'ADA', 'SPY', 'MSTR', 'NVDA', 'IONQ', 'COIN'];

export async function smallSite(dir: string, day = 1, historyStart = '2025-06-01', symbols = SMALL): Promise<string> {
  await writeSite({ out: dir, day, symbols, historyStart, catalog: CATALOG });
  return join(dir, 'catalog.json');
}

/**
 * A build of a small site; `init` where there is no tree to continue (no `previous`, none in `out`), so a first build
 * into a new folder starts its ledger.
 */
export function buildSmall(pages: string, out: string, extra: Partial<BuildOptions> = {}) {
  const init = !extra.previous && !existsSync(join(out, 'v1'));
  return build({ pages, out, catalog: join(pages, 'catalog.json'), now: '2026-10-14T00:30:00Z', init, ...extra });
}

/**
 * The source pages a site folder holds for the catalogue, as discovery finds them: what a build reports as read.
 * Counted, not written down, so that a new page kind changes no test.
 */
export const sitePages = (dir: string): number => classify(readdirSync(dir), CATALOG).pages.length;

export const readJson = <T = any>(file: string): T => JSON.parse(readFileSync(file, 'utf8')) as T; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Every file of the live tree of `dir` (through its `v1` link) with its SHA-256: equal maps, byte-identical trees. */
export function treeHashes(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (d: string, prefix: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p, `${prefix}${name}/`);
      else files.set(prefix + name, sha256(readFileSync(p)));
    }
  };
  walk(join(dir, 'v1'), '');
  return files;
}

/** The compiled CLI, as a pipeline runs it: a child process. */
export const BIN = join(ROOT, 'bin', 'risk-readings.js');
const FAULTS = join(ROOT, 'test', 'generator', 'output', 'faults.mjs');

export function cli(args: string[], env: Record<string, string> = {}, preload = false): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [...(preload ? ['--import', FAULTS] : []), BIN, ...args], {
    encoding: 'utf8',
    cwd: ROOT,
    env: { ...process.env, ...env },
  });
}

/** The same, not waited for: resolves with the exit status, signal and output. */
export function cliAsync(
  args: string[],
  env: Record<string, string> = {},
  preload = false,
): Promise<{ status: number | null; signal: string | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [...(preload ? ['--import', FAULTS] : []), BIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve) => child.on('close', (status, signal) => resolve({ status, signal, stdout, stderr })));
}

/**
 * How late a busy machine may be past a time the product promises (a timer held back, a child slow to start, a turn
 * of the event loop not given): a test that bounds a duration the product sets holds it to at least that time, and
 * to at most that time and this.
 */
export const LATE_MS = 15_000;

/**
 * Polls `check` until it gives a truthy value or `ms` have passed; returns its last value (tests assert on it). The
 * default is generous, for a busy machine: a wait for something that happens goes on as soon as it does, and a
 * bound only ends one that never will with the test's own assertion rather than its timeout.
 */
export async function until<T>(check: () => T | Promise<T>, ms = 60_000, every = 25): Promise<T> {
  const end = Date.now() + ms;
  let value = await check();
  while (!value && Date.now() < end) {
    await new Promise((r) => setTimeout(r, every));
    value = await check();
  }
  return value;
}
