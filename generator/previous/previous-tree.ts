/**
 * The previous build's tree, which holds the history ledger: the one thing a build cannot make again. It is
 * read from a folder (the live tree of `--out` by default) or from the URL of a deployed tree (http-tree.ts), and
 * either reader hands its bytes to openTree (open-tree.ts), which checks every file against the tree's own
 * manifest. The one way in for the build: the layers below import open-tree.ts, never this.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { liveTree } from '../output/live-tree.js';
import { fetchTree } from './http-tree.js';
import { openTree, type PreviousTree, type ReadBytes } from './open-tree.js';

export { PreviousTreeError, type PreviousTree } from './open-tree.js';

/** The live tree of a local output folder as the previous tree; null when it holds none. */
export async function folderTree(dir: string): Promise<PreviousTree | null> {
  const root = liveTree(dir);
  if (!root) return null;
  // One blocking read per file, as pages are read: a build waits on each file it reads from the previous tree, and
  // fs/promises' readFile takes several trips through the thread pool for each.
  const read: ReadBytes = async (path) => {
    try {
      return readFileSync(join(root, path));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
  };
  return openTree(dir, read, root);
}

export const isUrl = (s: string) => /^https?:\/\//i.test(s);

/** `--previous` as a folder or the URL of a deployed tree; null when there is no previous tree there. */
export async function openPrevious(source: string, token?: string): Promise<PreviousTree | null> {
  return isUrl(source) ? fetchTree(source, token) : folderTree(source);
}
