import { relative } from 'node:path';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Files longest first, whatever their project (vitest's own order runs the projects one after the other): the files
 * that mostly wait (webhook deliveries and claims, Redis stalls, kills under load) start early, beside the builds,
 * instead of waiting at the end with a core idle. Longest by the last run's time where vitest has it, else by size.
 */
class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const cache = this.ctx.cache;
    const key = (f: TestSpecification) => `${f.project.name}:${relative(this.ctx.config.root, f.moduleId)}`;
    const time = (f: TestSpecification) => cache.getFileTestResults(key(f))?.duration;
    const timed = files.every((f) => time(f) !== undefined);
    const weight = new Map(files.map((f) => [f, (timed ? time(f) : cache.getFileStats(key(f))?.size) ?? 0]));
    return [...files].sort((a, b) => weight.get(b)! - weight.get(a)!);
  }
}

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
    // Two cores: two files of builds at a time, and a third that mostly waits on timers beside them.
    maxWorkers: 3,
    sequence: { sequencer: LongestFirst },
    projects: [
      // Pure functions: one module graph per worker rather than one per file (a third of the CPU these files took).
      { extends: true, test: { name: 'unit', include: UNIT, isolate: false } },
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
