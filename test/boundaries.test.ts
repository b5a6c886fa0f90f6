/**
 * The import boundaries of eslint.config.js: each layer is refused what lies above it, and allowed what lies below;
 * and no module imports, through any others, one that imports it (a circle has no layers).
 */
import { ESLint } from 'eslint';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './helpers.js';

const eslint = new ESLint({ cwd: ROOT });

/** The boundary messages ESLint gives for one import written in a file at `file` (the file need not exist). */
async function refusals(file: string, source: string): Promise<string[]> {
  const [result] = await eslint.lintText(`import { x } from '${source}';\nexport const y = x;\n`, { filePath: join(ROOT, file) });
  return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports' || m.ruleId === 'no-restricted-syntax').map((m) => m.message);
}

describe('import boundaries', () => {
  it.each([
    ['generator/contract/x.ts', 'node:fs', 'runtime-neutral'],
    ['generator/contract/x.ts', '../api/envelope.js', 'self-contained'],
    ['auth-shim/x.ts', '../generator/output/manifest.js', 'only the shared contract'],
    ['auth-shim/x.ts', 'node:crypto', 'without Node'],
    ['auth-shim/steps/x.ts', '../../generator/site/html.js', 'only the shared contract'],
    ['auth-shim/steps/x.ts', 'node:fs', 'without Node'],
    ['auth-shim/node/x.ts', '../../generator/build.js', 'the Node adapter'],
    ['generator/site/kinds/x.ts', '../../api/asset-risk.js', 'knows pages only'],
    ['generator/site/x.ts', '../output/manifest.js', 'knows pages only'],
    ['generator/openapi/x.ts', '../api/envelope.js', 'from the contract'],
    ['generator/output/x.ts', '../api/history.js', 'not how readings are made'],
    ['generator/api/x.ts', '../build.js', 'do not depend'],
    ['generator/output/x.ts', '../../auth-shim/handler.js', 'only generator/commands/serve.ts may import the shim'],
    ['generator/cli.ts', '../auth-shim/node/server.js', 'only generator/commands/serve.ts may import the shim'],
    ['generator/commands/usage.ts', '../../auth-shim/node/server.js', 'reads the quota stores only'],
    ['generator/commands/usage.ts', '../../auth-shim/handler.js', 'reads the quota stores only'],
    ['generator/output/x.ts', '../commands/build.js', 'not how readings are made'],
    ['generator/site/x.ts', '../read-inputs.js', 'knows pages only'],
    ['generator/read-inputs.ts', './plan-tree.js', 'the read step returns plain data'],
    ['generator/read-inputs.ts', './api/changes.js', 'the read step returns plain data'],
    ['generator/read-inputs.ts', './openapi/document.js', 'the read step returns plain data'],
    ['generator/read-inputs.ts', './output/live-tree.js', 'the read step returns plain data'],
    ['generator/read-inputs.ts', './idle.js', 'the read step returns plain data'],
    ['generator/output/x.ts', '../build-options.js', 'not how readings are made'],
  ])('%s may not import %s', async (file, source, reason) => {
    expect((await refusals(file, source)).join('\n')).toContain(reason);
  });

  it.each([
    ['generator/contract/x.ts', './plans.js'],
    ['auth-shim/x.ts', '../generator/contract/index.js'],
    ['auth-shim/steps/x.ts', '../refusal.js'],
    ['auth-shim/node/x.ts', '../../generator/output/compress.js'],
    ['generator/site/kinds/x.ts', '../plotly.js'],
    ['generator/output/x.ts', '../contract/tree.js'],
    ['generator/commands/serve.ts', '../../auth-shim/node/server.js'],
    ['generator/commands/usage.ts', '../../auth-shim/node/quota-totals.js'],
    ['generator/commands/usage.ts', '../../auth-shim/quota.js'],
    ['generator/cli.ts', './commands/options.js'],
    ['generator/read-inputs.ts', './build-inputs.js'],
    ['generator/read-inputs.ts', './site/read-site.js'],
  ])('%s may import %s', async (file, source) => {
    expect(await refusals(file, source)).toEqual([]);
  });
});

/** An import or re-export of one of our modules (a relative path), static or dynamic, with what it names. */
const IMPORT = /^(?:import|export)\s+(type\s+)?(?:([^'";]*?)\s+from\s+)?'(\.\.?\/[^']+)'|\bimport\(\s*'(\.\.?\/[^']+)'\s*\)/gm;

/** `{ type A, type B }`: what the compiler erases, as it does `import type`. */
const namesTypesOnly = (names = '') =>
  /^\{[^}]*\}$/.test(names) &&
  names
    .slice(1, -1)
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean)
    .every((n) => n.startsWith('type '));

/**
 * Each module of `folders` and the modules of ours it loads when it runs. Imports of types only are left out: they
 * are gone once compiled, and a type may be shared both ways.
 */
function importGraph(...folders: string[]): Map<string, string[]> {
  const files = folders.flatMap((f) =>
    (readdirSync(join(ROOT, f), { recursive: true }) as string[]).filter((p) => p.endsWith('.ts')).map((p) => join(f, p)),
  );
  const known = new Set(files);
  return new Map(
    files.map((file) => {
      const loads = [...readFileSync(join(ROOT, file), 'utf8').matchAll(IMPORT)]
        .filter(([, type, names]) => !type && !namesTypesOnly(names))
        .map((m) => relative(ROOT, resolve(ROOT, dirname(file), (m[3] ?? m[4])!)).replace(/\.js$/, '.ts'))
        .filter((p) => known.has(p));
      return [file, loads];
    }),
  );
}

/** Every circle of imports in `graph`, each as `a -> b -> a`, found by one depth-first walk. */
function circles(graph: Map<string, string[]>): string[] {
  const found: string[] = [];
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (file: string) => {
    path.push(file);
    for (const next of graph.get(file) ?? []) {
      if (path.includes(next)) found.push([...path.slice(path.indexOf(next)), next].join(' -> '));
      else if (!done.has(next)) visit(next);
    }
    path.pop();
    done.add(file);
  };
  for (const file of graph.keys()) if (!done.has(file)) visit(file);
  return found;
}

describe('import circles', () => {
  it('finds a circle, and through a re-export or a dynamic import', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', ['a.ts']],
    ]);
    expect(circles(graph)).toEqual(['a.ts -> b.ts -> c.ts -> a.ts']);
    const lines =
      "export { x } from './a.js';\nconst m = await import('./b.js');\nimport type { T } from './c.js';\nimport { type U } from './d.js';\n";
    expect([...lines.matchAll(IMPORT)].filter(([, type, names]) => !type && !namesTypesOnly(names)).map((m) => m[3] ?? m[4])).toEqual([
      './a.js',
      './b.js',
    ]);
  });

  it('the generator and the shim import one way: no module loads one that loads it', () => {
    const graph = importGraph('generator', 'auth-shim');
    expect(graph.get('generator/previous/http-tree.ts')).toContain('generator/previous/open-tree.ts');
    expect(circles(graph)).toEqual([]);
  });
});
