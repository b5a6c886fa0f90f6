/** Reads a built tree from disk for the diff: the manifest up front, the files it lists only when asked. */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { TREE } from '../contract/tree.js';
import { asManifest } from '../contract/manifest-check.js';
import { liveTree } from '../output/live-tree.js';
import type { Loader } from './compare.js';

export class TreeTrouble extends Error {}

export function diskLoader(dir: string): Loader {
  const root = liveTree(dir) ?? join(dir, 'v1');
  const read = async <T>(path: string): Promise<T | undefined> => {
    let text: string;
    try {
      text = await readFile(join(root, path), 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new TreeTrouble(`${join(dir, 'v1', path)}: ${(e as Error).message}`);
    }
    try {
      return JSON.parse(text) as T;
    } catch (e) {
      throw new TreeTrouble(`${join(dir, 'v1', path)}: not JSON (${(e as Error).message})`);
    }
  };
  return {
    manifest: async () => {
      const m = await read<unknown>(TREE.manifest);
      const file = join(dir, 'v1', TREE.manifest);
      if (!m) throw new TreeTrouble(`${file}: no manifest here; is ${dir} a built tree (a folder holding v1/)?`);
      // The problem names the manifest: `<dir>/v1/_manifest.json is not a manifest ...`.
      return asManifest(m, (problem) => new TreeTrouble(`${join(dir, 'v1')}/${problem}`));
    },
    json: async <T>(path: string): Promise<T> => {
      const doc = await read<T>(path);
      // A file the manifest lists is there in a tree a build wrote whole: its absence is damage, not a removal.
      if (doc === undefined)
        throw new TreeTrouble(
          `${join(dir, 'v1', path)}: listed in ${TREE.manifest} but absent (risk-readings check --public ${dir} names all it finds)`,
        );
      return doc;
    },
  };
}
