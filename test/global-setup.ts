/**
 * Before any test file: the compiled CLI and bench exist (CLI, diff and bench tests run them as child processes,
 * as a pipeline does). `npm test` compiles first; a bare `vitest run` on a fresh clone compiles here, so those
 * tests never skip for want of dist/.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export default function setup(): void {
  const root = join(import.meta.dirname, '..');
  if (existsSync(join(root, 'dist', 'generator', 'cli.js')) && existsSync(join(root, 'dist', 'bench', 'run.js'))) return;
  const r = spawnSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.bench.json'], {
    cwd: root,
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`compiling dist/ for the tests failed:\n${r.stdout}${r.stderr}`);
}
