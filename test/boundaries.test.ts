/** The import boundaries of eslint.config.js: each layer is refused what lies above it, and allowed what lies below. */
import { ESLint } from 'eslint';
import { join } from 'node:path';
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
