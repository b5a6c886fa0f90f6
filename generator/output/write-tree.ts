/** Writes a tree to a staging folder beside `v1/` and swaps it in, so a reader never sees half a build. */
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import fg from 'fast-glob';

export async function writeTree(outDir: string, files: Map<string, string>): Promise<void> {
  await mkdir(outDir, { recursive: true });
  const staging = join(outDir, `.v1-staging-${process.pid}`);
  const old = join(outDir, `.v1-old-${process.pid}`);
  await rm(staging, { recursive: true, force: true });
  const dirs = new Set([...files.keys()].map((f) => dirname(join(staging, f))));
  for (const d of [...dirs].sort()) await mkdir(d, { recursive: true });
  const entries = [...files.entries()];
  // Bounded parallel writes: fast on a thousand small files without exhausting descriptors.
  for (let i = 0; i < entries.length; i += 64) {
    await Promise.all(entries.slice(i, i + 64).map(([path, text]) => writeFile(join(staging, path), text)));
  }
  const live = join(outDir, 'v1');
  if (existsSync(live)) await rename(live, old);
  await rename(staging, live);
  await rm(old, { recursive: true, force: true });
}

/** Every file of `<dir>/v1` as text, by its path inside v1. Empty when there is no tree. */
export async function readTree(dir: string): Promise<Map<string, string>> {
  const root = join(dir, 'v1');
  const out = new Map<string, string>();
  if (!existsSync(root)) return out;
  const paths = (await fg('**/*', { cwd: root, onlyFiles: true, dot: false })).sort();
  for (let i = 0; i < paths.length; i += 64) {
    const chunk = paths.slice(i, i + 64);
    const texts = await Promise.all(chunk.map((p) => readFile(join(root, p), 'utf8')));
    chunk.forEach((p, k) => out.set(p, texts[k]!));
  }
  return out;
}

/** One file of a tree, parsed, or undefined when absent. */
export async function readTreeFile<T>(dir: string, path: string): Promise<T | undefined> {
  const file = join(dir, 'v1', path);
  if (!existsSync(file)) return undefined;
  return JSON.parse(await readFile(file, 'utf8')) as T;
}
