/** Writes a tree to a staging folder beside `v1/` and swaps it in, so a reader never sees half a build. */
import { link, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import fg from 'fast-glob';

/**
 * Files whose bytes the previous tree already holds are hard-linked from it instead of written again: a
 * rebuild where little changed costs metadata, not 35 MB of writes. A previous file is trusted only if its size
 * matches and it is no newer than the previous manifest (written last), so a hand-edited file is rewritten.
 */
export interface Reuse {
  dir: string;
  paths: Set<string>;
  sizes: Map<string, number>;
  /** Every reused path must link: on the first that cannot, give up and leave the live tree alone. */
  strict?: boolean;
}

export class ReuseRefused extends Error {}

async function reusable(reuse: Reuse | undefined, manifestMtime: number, path: string): Promise<string | null> {
  if (!reuse?.paths.has(path)) return null;
  const file = join(reuse.dir, 'v1', path);
  try {
    const st = await stat(file);
    return st.size === reuse.sizes.get(path) && st.mtimeMs <= manifestMtime ? file : null;
  } catch {
    return null;
  }
}

export async function writeTree(outDir: string, files: Map<string, string>, reuse?: Reuse): Promise<{ linked: number }> {
  const manifestMtime = reuse ? await stat(join(reuse.dir, 'v1', '_manifest.json')).then((s) => s.mtimeMs, () => -Infinity) : -Infinity;
  await mkdir(outDir, { recursive: true });
  const staging = join(outDir, `.v1-staging-${process.pid}`);
  const old = join(outDir, `.v1-old-${process.pid}`);
  await rm(staging, { recursive: true, force: true });
  const dirs = [...new Set([...files.keys()].map((f) => dirname(join(staging, f))))];
  for (let i = 0; i < dirs.length; i += 64) await Promise.all(dirs.slice(i, i + 64).map((d) => mkdir(d, { recursive: true })));
  // The manifest goes last: a file newer than its manifest is one edited by hand, never reused (see Reuse).
  const entries = [...files.entries()].filter(([p]) => p !== '_manifest.json');
  const manifestText = files.get('_manifest.json');
  let linked = 0;
  try {
    // Bounded parallel writes: fast on a thousand small files without exhausting descriptors.
    for (let i = 0; i < entries.length; i += 64) {
      await Promise.all(entries.slice(i, i + 64).map(async ([path, text]) => {
        const from = await reusable(reuse, manifestMtime, path);
        if (from) {
          try {
            await link(from, join(staging, path));
            linked++;
            return;
          } catch {
            // another filesystem, or no hard links here: write it
          }
        }
        if (reuse?.strict && reuse.paths.has(path)) throw new ReuseRefused(path);
        await writeFile(join(staging, path), text);
      }));
    }
    if (manifestText !== undefined) await writeFile(join(staging, '_manifest.json'), manifestText);
  } catch (e) {
    await rm(staging, { recursive: true, force: true });
    if (e instanceof ReuseRefused) return { linked: -1 };
    throw e;
  }
  const live = join(outDir, 'v1');
  if (existsSync(live)) await rename(live, old);
  await rename(staging, live);
  await rm(old, { recursive: true, force: true });
  return { linked };
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
