/** Shared test fixtures: temporary folders, synthetic sites, and builds. */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { loadCatalog, type Asset } from '../generator/catalog/catalog.js';
import { writeSite } from '../fixtures/synth/site.js';
import { build, type BuildOptions } from '../generator/build.js';

export const ROOT = join(import.meta.dirname, '..');
export const CATALOG: Asset[] = loadCatalog();

/** A temporary folder removed when the test file ends. */
export function tempDir(prefix = 'rr-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Assets that between them carry every page kind and markup variant. */
export const SMALL = ['BTC', 'ETH', 'AERO', 'ADA', 'SPY', 'MSTR', 'NVDA', 'IONQ', 'COIN'];

export async function smallSite(dir: string, day = 1, historyStart = '2025-06-01', symbols = SMALL): Promise<string> {
  await writeSite({ out: dir, day, symbols, historyStart, catalog: CATALOG });
  return join(dir, 'catalog.json');
}

export function buildSmall(pages: string, out: string, extra: Partial<BuildOptions> = {}) {
  return build({ pages, out, catalog: join(pages, 'catalog.json'), now: '2026-10-14T00:30:00Z', ...extra });
}

export const readJson = <T = any>(file: string): T => JSON.parse(readFileSync(file, 'utf8')) as T; // eslint-disable-line @typescript-eslint/no-explicit-any
