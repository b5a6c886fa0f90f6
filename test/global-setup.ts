/**
 * Before any test file: the compiled CLI and bench exist and are as new as their sources (CLI, diff and bench tests
 * run them as child processes, as a pipeline does). `npm test` compiles first; a bare `vitest run` on a fresh clone,
 * or after a source changed, compiles here, so those tests never skip for want of dist/ nor run yesterday's code (a
 * golden `-u` over a stale dist/ would pin what the sources no longer write).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** The folders tsconfig.bench.json compiles into dist/. */
const SOURCES = ['generator', 'auth-shim', 'fixtures/synth', 'types', 'bench'];

/** The newest modification time among the TypeScript files under `dir`. */
function newest(dir: string): number {
  if (!existsSync(dir)) return 0;
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) t = Math.max(t, newest(p));
    else if (e.name.endsWith('.ts')) t = Math.max(t, statSync(p).mtimeMs);
  }
  return t;
}

export default function setup(): void {
  const root = join(import.meta.dirname, '..');
  const outputs = [join(root, 'dist', 'generator', 'cli.js'), join(root, 'dist', 'bench', 'run.js')];
  const built = Math.min(...outputs.map((f) => (existsSync(f) ? statSync(f).mtimeMs : 0)));
  if (built > 0 && SOURCES.every((s) => newest(join(root, s)) <= built)) return;
  const r = spawnSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.bench.json'], {
    cwd: root,
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`compiling dist/ for the tests failed:\n${r.stdout}${r.stderr}`);
}
