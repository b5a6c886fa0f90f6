/** Writes a tree to a staging folder and publishes it whole (see live-tree.ts), so a reader never sees half a build. */
import { copyFile, link, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import fg from 'fast-glob';
import { ENCODING_SUFFIX, type Encoding } from '../contract/encodings.js';
import { TREE } from '../contract/tree.js';
import { discardStaging, liveTree, newStaging, publish } from './live-tree.js';
import type { Manifest } from './manifest.js';

/**
 * Files whose bytes the previous tree already holds are hard-linked from it instead of written again: a
 * rebuild where little changed costs metadata, not 35 MB of writes (and no compression).
 */
export interface Reuse {
  /** The folder holding the previous tree's files. */
  tree: string;
  /** Paths to take from it, each checked with `reusable`. */
  paths: Set<string>;
}

/**
 * Which of `candidates` (paths with their size in the previous manifest, compressed variants included) the
 * previous tree can lend. A file is trusted only if its size matches and it is no newer than the previous
 * manifest (written last), so a hand-edited file is made again.
 */
export async function reusable(tree: string, candidates: Map<string, number>): Promise<Set<string>> {
  const manifestMtime = await stat(join(tree, TREE.manifest)).then((s) => s.mtimeMs, () => -Infinity);
  const out = new Set<string>();
  const paths = [...candidates.keys()];
  for (let i = 0; i < paths.length; i += 64) {
    await Promise.all(paths.slice(i, i + 64).map(async (path) => {
      try {
        const st = await stat(join(tree, path));
        if (st.size === candidates.get(path) && st.mtimeMs <= manifestMtime) out.add(path);
      } catch {
        // absent: made again
      }
    }));
  }
  return out;
}

/** Every file a manifest lists, compressed variants included, with its size: what `reusable` checks. */
export function manifestSizes(m: Manifest): Map<string, number> {
  const sizes = new Map<string, number>();
  for (const [path, e] of Object.entries(m.files)) {
    sizes.set(path, e.size);
    for (const [enc, d] of Object.entries(e.encodings ?? {})) sizes.set(path + ENCODING_SUFFIX[enc as Encoding], d!.size);
  }
  return sizes;
}

/** writeFile, whose failure names the file: a failed write() (ENOSPC, EIO) carries no path of its own. */
export async function writeNamed(file: string, data: string | Uint8Array): Promise<void> {
  try {
    await writeFile(file, data);
  } catch (e) {
    (e as NodeJS.ErrnoException).path ??= file;
    throw e;
  }
}

/** A hard link, or a copy where links cannot be made (another filesystem). */
async function lend(from: string, to: string): Promise<boolean> {
  try {
    await link(from, to);
    return true;
  } catch {
    await copyFile(from, to);
    return false;
  }
}

/**
 * Writes `files` and takes `reuse.paths` from the previous tree into a staging folder, then publishes it.
 * The manifest goes last: a file newer than its manifest is one edited by hand, never reused (see `reusable`),
 * and a staging folder with a manifest is a finished one.
 */
export async function writeTree(outDir: string, files: Map<string, string | Uint8Array>, builtAt: string, reuse?: Reuse): Promise<{ linked: number }> {
  const staging = await newStaging(outDir);
  const manifestText = files.get(TREE.manifest);
  const jobs: (() => Promise<unknown>)[] = [];
  let linked = 0;
  for (const [path, data] of files) if (path !== TREE.manifest) jobs.push(() => writeNamed(join(staging, path), data));
  for (const path of reuse?.paths ?? []) if (!files.has(path)) jobs.push(async () => (await lend(join(reuse!.tree, path), join(staging, path))) && linked++);
  try {
    const dirs = [...new Set([...files.keys(), ...(reuse?.paths ?? [])].map((f) => dirname(join(staging, f))))];
    for (let i = 0; i < dirs.length; i += 64) await Promise.all(dirs.slice(i, i + 64).map((d) => mkdir(d, { recursive: true })));
    // Bounded parallel writes: fast on a thousand small files without exhausting descriptors.
    for (let i = 0; i < jobs.length; i += 64) await Promise.all(jobs.slice(i, i + 64).map((job) => job()));
    if (manifestText !== undefined) await writeNamed(join(staging, TREE.manifest), manifestText);
    await publish(outDir, staging, builtAt);
  } catch (e) {
    await discardStaging(staging);
    throw e;
  }
  return { linked };
}

/** Every JSON file of the live tree of `dir` as text, by its path inside v1 (compressed variants left out). */
export async function readTree(dir: string): Promise<Map<string, string>> {
  const root = liveTree(dir);
  const out = new Map<string, string>();
  if (!root || !existsSync(root)) return out;
  const paths = (await fg('**/*.json', { cwd: root, onlyFiles: true, dot: false })).sort();
  for (let i = 0; i < paths.length; i += 64) {
    const chunk = paths.slice(i, i + 64);
    const texts = await Promise.all(chunk.map((p) => readFile(join(root, p), 'utf8')));
    chunk.forEach((p, k) => out.set(p, texts[k]!));
  }
  return out;
}
