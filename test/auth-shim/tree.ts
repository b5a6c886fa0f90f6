/** The tree the shim's tests serve: the small synthetic site over three days, and the demo keys. */
import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { inject } from 'vitest';
import { ROOT, buildSmall, readJson, smallSite } from '../helpers.js';

export const KEYS_FILE = join(ROOT, 'fixtures', 'keys', 'example-keys.json');
export const KEY = {
  basic: 'rr_demo_basic_key_not_secret',
  pro: 'rr_demo_pro_key_not_secret',
  ultra: 'rr_demo_ultra_key_not_secret',
  /** A pro key whose entry expired on 2026-02-01 (decision 37): before any clock the tests run on. */
  expired: 'rr_demo_expired_key_not_secret',
} as const;

/** Builds the tree (the end-to-end project's global setup does it once, tree-setup.ts). */
export async function buildTree(root: string): Promise<string> {
  const out = join(root, 'public');
  for (const day of [1, 2, 3]) {
    const pages = join(root, `day${day}`);
    await smallSite(pages, day);
    await buildSmall(pages, out, { now: `2026-10-${13 + day}T00:30:00Z` });
  }
  return out;
}

/** The shared tree, built once for all shim tests: read it, never change it. */
export const builtTree = (): string => inject('shimTree');

/** A copy of the shared tree under `root`, for a test that changes it (a rebuild underneath, a vanished file). */
export function copiedTree(root: string): string {
  const out = join(root, 'public');
  cpSync(builtTree(), out, { recursive: true, verbatimSymlinks: true });
  return out;
}

export const treeJson = (out: string, path: string) => readJson(join(out, 'v1', path));
