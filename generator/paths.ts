import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package root, found by walking up from this module: the same answer from `dist/` and from source. */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error('risk-readings: cannot find the package root above ' + fileURLToPath(import.meta.url));
    dir = up;
  }
}

export const defaultCatalogPath = (): string => join(packageRoot(), 'generator', 'catalog', 'catalog.json');

/** `risk-readings <version>`, as health.json and `--version` give it. */
export function renderVersion(): string {
  const pkg = JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string };
  return `risk-readings ${pkg.version}`;
}
