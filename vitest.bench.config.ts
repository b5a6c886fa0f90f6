import { defineConfig } from 'vitest/config';

/** `npm run bench:smoke`: `npm run bench` end to end on a tiny site (every figure written, none asserted); not part of `npm test`. */
export default defineConfig({
  test: { testTimeout: 300_000, hookTimeout: 180_000, include: ['test/bench/**/*.test.ts'], globalSetup: ['test/global-setup.ts'] },
});
