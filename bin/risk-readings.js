#!/usr/bin/env node
// The CLI is compiled to dist/ by `npm ci` (the package's prepare script).
import('../dist/generator/cli.js').catch((e) => {
  if (e && e.code === 'ERR_MODULE_NOT_FOUND' && String(e.message).includes('dist/generator/cli.js')) {
    console.error('risk-readings: not compiled yet; run `npm ci` (or `npm run build`) first.');
    process.exit(2);
  }
  throw e;
});
