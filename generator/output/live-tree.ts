/**
 * The layout of an output folder, and the one atomic step that publishes a tree.
 *
 *   <out>/v1 -> .trees/<id>          a symbolic link: the live tree
 *   <out>/.trees/<id>/               complete trees (only ever created by renaming a finished staging folder)
 *   <out>/.trees/.staging-<...>/     a tree being written
 *   <out>/.trees/.trash-<...>/       a tree being removed
 *
 * Publishing renames a finished staging folder to its final name, makes a new link beside `v1`, and renames
 * that link over `v1`. rename(2) replaces its target atomically on POSIX: at every instant `v1` names either the
 * old complete tree or the new one, so a build killed at any point leaves a servable tree. Folders without a dot
 * under `.trees` are complete by construction (a staging folder is renamed only once its manifest is written;
 * a tree is renamed to `.trash-*` before it is removed), which is what lets a later build tidy up and, if `v1`
 * itself is missing (an older layout killed mid-swap, a hand-deleted link), recover the newest complete tree.
 */
import { existsSync, lstatSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { mkdir, rename, rm, symlink } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { basename, dirname, join } from 'node:path';

const LIVE = 'v1';
const TREES = '.trees';
const STAGING = '.staging-';
const TRASH = '.trash-';
const NEXT_LINK = '.v1-next-';
/** Folders the first layout (a `v1/` directory renamed in and out) left behind when killed. */
const LEGACY_STAGING = '.v1-staging-';
const LEGACY_OLD = '.v1-old-';

const suffix = () => `${process.pid}-${randomBytes(4).toString('hex')}`;

function builtAtOf(dir: string): string | null {
  try {
    const m = JSON.parse(readFileSync(join(dir, '_manifest.json'), 'utf8')) as { built_at?: unknown };
    return typeof m.built_at === 'string' ? m.built_at : null;
  } catch {
    return null;
  }
}

/** Complete trees that `v1` could name: finished trees under `.trees`, and an older layout's set-aside `v1`. */
function candidates(out: string): { dir: string; builtAt: string }[] {
  const found: { dir: string; builtAt: string }[] = [];
  const consider = (dir: string) => {
    const builtAt = builtAtOf(dir);
    if (builtAt) found.push({ dir, builtAt });
  };
  const trees = join(out, TREES);
  if (existsSync(trees)) for (const name of readdirSync(trees)) if (!name.startsWith('.')) consider(join(trees, name));
  if (existsSync(out)) for (const name of readdirSync(out)) if (name.startsWith(LEGACY_OLD)) consider(join(out, name));
  return found.sort((a, b) => (a.builtAt < b.builtAt ? 1 : a.builtAt > b.builtAt ? -1 : a.dir < b.dir ? 1 : -1));
}

const present = (path: string) => {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
};

/**
 * The folder holding the live tree of `out`: where `v1` points, or, when `v1` is missing, the newest complete
 * tree a killed build left (read-only: the next build makes `v1` point at it). Null when there is no tree.
 */
export function liveTree(out: string): string | null {
  const v1 = join(out, LIVE);
  if (present(v1)) {
    try {
      return realpathSync(v1);
    } catch {
      return null;
    }
  }
  return candidates(out)[0]?.dir ?? null;
}

/** Remove a folder so that no half-removed tree ever carries a complete tree's name. */
async function discard(dir: string): Promise<void> {
  const name = basename(dir);
  const trash = name.startsWith(TRASH) ? dir : join(dir, '..', `${TRASH}${name.replace(/^\./, '')}-${suffix()}`);
  if (trash !== dir) await rename(dir, trash);
  await rm(trash, { recursive: true, force: true });
}

/** Point `v1` at `tree` (a folder under `.trees`), atomically. */
async function link(out: string, tree: string): Promise<void> {
  const next = join(out, `${NEXT_LINK}${suffix()}`);
  await symlink(join(TREES, basename(tree)), next);
  try {
    await rename(next, join(out, LIVE));
  } catch (e) {
    await rm(next, { force: true });
    throw e;
  }
}

/**
 * Under the build's lock, before anything is written: make `v1` name a complete tree if a killed build left it
 * missing, and remove what killed builds left (staging and trash folders, stray links, trees no link names).
 * Returns what it did, for the build report.
 */
export async function tidy(out: string): Promise<{ recovered: string | null; removed: string[] }> {
  let recovered: string | null = null;
  const v1 = join(out, LIVE);
  if (!present(v1)) {
    const best = candidates(out)[0];
    if (best) {
      let tree = best.dir;
      if (basename(tree).startsWith(LEGACY_OLD)) {
        await mkdir(join(out, TREES), { recursive: true });
        tree = join(out, TREES, `recovered-${suffix()}`);
        await rename(best.dir, tree);
      }
      await link(out, tree);
      recovered = tree;
    }
  }
  const live = liveTree(out);
  const removed: string[] = [];
  for (const name of existsSync(out) ? readdirSync(out) : []) {
    const path = join(out, name);
    if (name.startsWith(NEXT_LINK)) await rm(path, { force: true });
    else if (name.startsWith(LEGACY_STAGING) || name.startsWith(LEGACY_OLD)) await discard(path);
    else continue;
    removed.push(name);
  }
  const trees = join(out, TREES);
  for (const name of existsSync(trees) ? readdirSync(trees) : []) {
    const path = join(trees, name);
    if (realpathSync(path) === live) continue;
    await discard(path);
    removed.push(join(TREES, name));
  }
  return { recovered, removed };
}

/** A fresh staging folder for a tree, beside the trees it will join (same filesystem, so renames are atomic). */
export async function newStaging(out: string): Promise<string> {
  const dir = join(out, TREES, `${STAGING}${suffix()}`);
  await mkdir(dir, { recursive: true });
  return dir;
}

export const discardStaging = (dir: string) => rm(dir, { recursive: true, force: true });

/**
 * Publish a finished staging folder: rename it to its final name, swap `v1` to it, then remove the tree `v1`
 * named before. A `v1` that is still a plain folder (the first layout) is moved under `.trees` first; if the
 * build dies right then, `v1` is missing for a moment and the next build (or `serve`) recovers that tree.
 */
export async function publish(out: string, staging: string, builtAt: string): Promise<string> {
  const tree = join(out, TREES, `${builtAt.replace(/[-:]/g, '').replace(/Z$/, '')}-${suffix()}`);
  await rename(staging, tree);
  const v1 = join(out, LIVE);
  let old: string | null = null;
  if (present(v1)) {
    if (lstatSync(v1).isSymbolicLink()) {
      // Only a tree this layout made is removed: a link an operator pointed elsewhere leaves its target alone.
      const target = liveTree(out);
      old = target && dirname(target) === realpathSync(join(out, TREES)) ? target : null;
    } else {
      old = join(out, TREES, `legacy-${suffix()}`);
      await rename(v1, old);
    }
  }
  await link(out, tree);
  if (old && old !== tree && existsSync(old)) await discard(old);
  return tree;
}
