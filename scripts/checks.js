#!/usr/bin/env node
// `npm test`'s first step: ESLint, Prettier, knip and the compile of everything (type-checked, and written to dist/,
// which the CLI and bench tests run), side by side rather than one after the other: each leaves part of a core idle
// on its own. Each one's output is printed whole as it ends, so two never interleave; any failure fails the step,
// after all have ended.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const bin = (name) => join(root, 'node_modules', '.bin', name);
const CHECKS = [
  ['eslint', [bin('eslint'), '.']],
  ['prettier', [bin('prettier'), '--check', '.']],
  ['knip', [bin('knip')]],
  // tsconfig.json's files are all the TypeScript there is (the product, the bench, the tests): one compile checks all.
  ['tsc', [bin('tsc'), '-p', 'tsconfig.json']],
];

const started = Date.now();
const results = await Promise.all(
  CHECKS.map(
    ([name, [command, ...args]]) =>
      new Promise((resolve) => {
        let output = '';
        let ended = false;
        // Said once, when the tool has ended (or could not start: `error`, which may or may not be followed by `close`).
        const end = (ok, how) => {
          if (ended) return;
          ended = true;
          const seconds = ((Date.now() - started) / 1000).toFixed(1);
          process.stderr.write(`${ok ? 'ok' : 'FAILED'}: ${name} (${seconds} s${how})\n${ok ? '' : output}`);
          resolve({ name, ok });
        };
        const child = spawn(command, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
        child.stdout.on('data', (d) => (output += d));
        child.stderr.on('data', (d) => (output += d));
        child.on('error', (e) => end(false, `, could not run ${command}: ${e.message}`));
        child.on('close', (code, signal) => end(code === 0, signal ? `, ${signal}` : ''));
      }),
  ),
);
const failed = results.filter((r) => !r.ok).map((r) => r.name);
if (failed.length) {
  process.stderr.write(`checks failed: ${failed.join(', ')}\n`);
  process.exit(1);
}
