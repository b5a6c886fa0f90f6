#!/usr/bin/env node
// The supported Node lines (package.json's engines): an older node fails late and obscurely (no node:sqlite), so
// it is named here, first.
const [major, minor] = process.versions.node.split('.').map(Number);
if (!(major === 22 ? minor >= 13 : major >= 24)) {
  console.error(`risk-readings: needs Node 22.13 or later, or Node 24 (this is ${process.execPath}, Node ${process.versions.node})`);
  process.exit(2);
}
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
