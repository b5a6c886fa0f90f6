import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 180_000,
    hookTimeout: 180_000,
    // Builds are CPU-heavy: two files at a time on a two-core machine.
    maxWorkers: 2,
  },
});
