/** Writes a tree to a staging folder and publishes it whole (see live-tree.ts), so a reader never sees half a build. */
import { link, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import fg from 'fast-glob';
import { discardStaging, liveTree, newStaging, publish } from './live-tree.js';

/**
 * Files whose bytes the previous tree already holds are hard-linked from it instead of written again: a
 * rebuild where little changed costs metadata, not 35 MB of writes. A previous file is trusted only if its size
 * matches and it is no newer than the previous manifest (written last), so a hand-edited file is rewritten.
 */
export interface Reuse {
  /** The folder holding the previous tree's files. */
  tree: string;
  paths: Set<string>;
  sizes: Map<string, number>;
  /** Every reused path must link: on the first that cannot, give up and leave the live tree alone. */
  strict?: boolean;
}

export class ReuseRefused extends Error {}

async function reusable(reuse: Reuse | undefined, manifestMtime: number, path: string): Promise<string | null> {
  if (!reuse?.paths.has(path)) return null;
  const file = join(reuse.tree, path);
  try {
    const st = await stat(file);
    return st.size === reuse.sizes.get(path) && st.mtimeMs <= manifestMtime ? file : null;
  } catch {
    return null;
  }
}

/** writeFile, whose failure names the file: a failed write() (ENOSPC, EIO) carries no path of its own. */
export async function writeNamed(file: string, text: string): Promise<void> {
  try {
    await writeFile(file, text);
  } catch (e) {
    (e as NodeJS.ErrnoException).path ??= file;
    throw e;
  }
}

export async function writeTree(outDir: string, files: Map<string, string>, builtAt: string, reuse?: Reuse): Promise<{ linked: number }> {
  const manifestMtime = reuse ? await stat(join(reuse.tree, '_manifest.json')).then((s) => s.mtimeMs, () => -Infinity) : -Infinity;
  const staging = await newStaging(outDir);
  // The manifest goes last: a file newer than its manifest is one edited by hand, never reused (see Reuse), and a
  // staging folder with a manifest is a finished one.
  const entries = [...files.entries()].filter(([p]) => p !== '_manifest.json');
  const manifestText = files.get('_manifest.json');
  let linked = 0;
  try {
    const dirs = [...new Set([...files.keys()].map((f) => dirname(join(staging, f))))];
    for (let i = 0; i < dirs.length; i += 64) await Promise.all(dirs.slice(i, i + 64).map((d) => mkdir(d, { recursive: true })));
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
        await writeNamed(join(staging, path), text);
      }));
    }
    if (manifestText !== undefined) await writeNamed(join(staging, '_manifest.json'), manifestText);
    await publish(outDir, staging, builtAt);
  } catch (e) {
    await discardStaging(staging);
    if (e instanceof ReuseRefused) return { linked: -1 };
    throw e;
  }
  return { linked };
}

/** Every file of the live tree of `dir` as text, by its path inside v1. Empty when there is no tree. */
export async function readTree(dir: string): Promise<Map<string, string>> {
  const root = liveTree(dir);
  const out = new Map<string, string>();
  if (!root || !existsSync(root)) return out;
  const paths = (await fg('**/*', { cwd: root, onlyFiles: true, dot: false })).sort();
  for (let i = 0; i < paths.length; i += 64) {
    const chunk = paths.slice(i, i + 64);
    const texts = await Promise.all(chunk.map((p) => readFile(join(root, p), 'utf8')));
    chunk.forEach((p, k) => out.set(p, texts[k]!));
  }
  return out;
}
