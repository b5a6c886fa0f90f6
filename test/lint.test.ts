/**
 * The import boundaries of biome.json hold: each rule, given a file that breaks it in a copy of the layout, fails
 * the lint with its message (the repository itself is linted by `npm test` before the suite runs).
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, tempDir } from './helpers.js';

const root = tempDir('rr-lint-');
copyFileSync(join(ROOT, 'biome.json'), join(root, 'biome.json'));

function lint(file: string, text: string): { status: number | null; out: string } {
  const path = join(root, file);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  const r = spawnSync(process.execPath, [join(ROOT, 'node_modules', '@biomejs', 'biome', 'bin', 'biome'), 'lint', '--vcs-enabled=false', file], {
    cwd: root,
    encoding: 'utf8',
  });
  return { status: r.status, out: r.stdout + r.stderr };
}

describe('import boundaries', () => {
  it.each([
    ['generator/contract/a.ts', "import { build } from '../build.js';\nexport const x = build;\n", 'The contract is self-contained'],
    ['generator/contract/b.ts', "import { readFileSync } from 'node:fs';\nexport const x = readFileSync;\n", 'The contract is self-contained'],
    ['auth-shim/c.ts', "import { readSite } from '../generator/site/read-site.js';\nexport const x = readSite;\n", 'reads only the shared contract'],
    ['auth-shim/node/d.ts', "import { build } from '../../generator/build.js';\nexport const x = build;\n", 'the contract and the output layout only'],
    ['generator/build2.ts', "import { createHandler } from '../auth-shim/handler.js';\nexport const x = createHandler;\n", 'does not depend on the shim'],
    ['generator/site/e.ts', "import { envelope } from '../api/envelope.js';\nexport const x = envelope;\n", 'Page parsing comes first'],
  ])('%s breaking its boundary fails the lint', (file, text, message) => {
    const r = lint(file, text);
    expect(r.status).toBe(1);
    expect(r.out).toContain(message);
  });

  it('an import the rules allow passes', () => {
    const r = lint('auth-shim/f.ts', "import { TREE } from '../generator/contract/tree.js';\nexport const x = TREE;\n");
    expect(r.status, r.out).toBe(0);
  });
});
