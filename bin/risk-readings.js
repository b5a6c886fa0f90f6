#!/usr/bin/env node
// The supported Node lines (package.json's engines): an older node fails late and obscurely (no node:sqlite), so
// it is named here, first.
const [major, minor] = process.versions.node.split('.').map(Number);
if (!(major === 22 ? minor >= 13 : major >= 24)) {
  console.error(`risk-readings: needs Node 22.13 or later, or Node 24 (this is ${process.execPath}, Node ${process.versions.node})`);
  process.exit(2);
}
// `build` runs under the Node options of generator/node-options.ts (a bounded young generation; why is said there).
// V8 reads them only as a process starts, so the process replaces itself once with them added (process.execve: the
// same pid, stdio and signals). An option already given, on the command line or in NODE_OPTIONS, stands. Where the
// process cannot replace itself (Windows) the build runs with Node's own sizes.
if (process.argv[2] === 'build' && typeof process.execve === 'function') {
  const name = (o) => o.split('=')[0].replaceAll('_', '-');
  const given = new Set([...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)].map(name));
  const options = await import('../dist/generator/node-options.js').then(
    (m) => m.buildNodeOptions().filter((o) => !given.has(name(o))),
    () => [], // not compiled: the import of the CLI below says so
  );
  if (options.length)
    try {
      process.execve(process.execPath, [process.execPath, ...process.execArgv, ...options, ...process.argv.slice(1)]);
    } catch {
      // execve(2) refused (the permission model, say): this process goes on as it is.
    }
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
