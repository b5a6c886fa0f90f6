import { defineConfig } from 'vitest/config';

/** Tests that need no build of a site: parsers, response functions, the contract, the shim's steps, the lint rules. */
const UNIT = [
  'test/generator/site/**/*.test.ts',
  'test/generator/api/**/*.test.ts',
  'test/generator/contract/**/*.test.ts',
  'test/generator/plan-tree.test.ts',
  'test/auth-shim/steps/**/*.test.ts',
  'test/auth-shim/webhooks/**/*.test.ts',
  'test/scripts/**/*.test.ts',
  'test/boundaries.test.ts',
  'test/package.test.ts',
];

export default defineConfig({
  test: {
    // A guard against a hang, not a bound on speed: a busy machine takes several times as long as an idle one.
    testTimeout: 600_000,
    hookTimeout: 600_000,
    // Builds are CPU-heavy: two files at a time on a two-core machine.
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'unit', include: UNIT } },
      // Builds of synthetic sites, through the API and through the compiled CLI as a pipeline runs it.
      {
        extends: true,
        test: {
          name: 'build',
          include: ['test/generator/**/*.test.ts', 'test/fixtures/**/*.test.ts'],
          exclude: UNIT,
          globalSetup: ['test/global-setup.ts'],
        },
      },
      // The shim over one tree built once: the handler, the Node server, the edge entry under workerd, Chromium.
      {
        extends: true,
        test: {
          name: 'end-to-end',
          include: ['test/auth-shim/*.test.ts', 'test/auth-shim/node/**/*.test.ts', 'test/docs/**/*.test.ts'],
          globalSetup: ['test/global-setup.ts', 'test/auth-shim/tree-setup.ts'],
        },
      },
    ],
  },
});
