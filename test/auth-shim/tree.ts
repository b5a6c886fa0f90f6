/** A built tree for the shim's tests: the small synthetic site over three days, and the demo keys. */
import { join } from 'node:path';
import { ROOT, buildSmall, readJson, smallSite } from '../helpers.js';

export const KEYS_FILE = join(ROOT, 'fixtures', 'keys', 'example-keys.json');
export const KEY = {
  basic: 'rr_demo_basic_key_not_secret',
  pro: 'rr_demo_pro_key_not_secret',
  ultra: 'rr_demo_ultra_key_not_secret',
} as const;

export async function builtTree(root: string): Promise<string> {
  const out = join(root, 'public');
  for (const day of [1, 2, 3]) {
    const pages = join(root, `day${day}`);
    await smallSite(pages, day);
    await buildSmall(pages, out, { now: `2026-10-${13 + day}T00:30:00Z` });
  }
  return out;
}

export const treeJson = (out: string, path: string) => readJson(join(out, 'v1', path));
