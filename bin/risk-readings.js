#!/usr/bin/env node
// Node 22 marks its built-in SQLite (the quota database) experimental and says so on every start: a user of the
// CLI has nothing to do about it, so that one warning is left out; every other warning is printed as Node prints it.
process.removeAllListeners('warning');
process.on('warning', (w) => {
  if (w.name === 'ExperimentalWarning' && /SQLite/.test(w.message)) return;
  process.stderr.write(`(node:${process.pid}) ${w.name}: ${w.message}\n`);
});
// The CLI is compiled to dist/ by `npm ci` (the package's prepare script).
import('../dist/generator/cli.js').catch((e) => {
  if (e && e.code === 'ERR_MODULE_NOT_FOUND' && String(e.message).includes('dist/generator/cli.js')) {
    console.error('risk-readings: not compiled yet; run `npm ci` (or `npm run build`) first.');
    process.exit(2);
  }
  throw e;
});
