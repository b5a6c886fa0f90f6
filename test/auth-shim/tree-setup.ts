/**
 * Once for the end-to-end project: the tree every shim test serves (the small synthetic site built over three
 * days), built before its files run and handed to them by `inject('shimTree')`. Tests that change a tree change a
 * copy of it (`copiedTree`). And a folder for the edge's bundles, made once a run (`inject('edgeBundles')`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { buildTree } from './tree.js';

declare module 'vitest' {
  export interface ProvidedContext {
    shimTree: string;
    edgeBundles: string;
  }
}

export default async function setup(project: TestProject): Promise<() => void> {
  const root = mkdtempSync(join(tmpdir(), 'rr-shim-tree-'));
  project.provide('shimTree', await buildTree(root));
  const bundles = mkdtempSync(join(tmpdir(), 'rr-edge-bundles-'));
  project.provide('edgeBundles', bundles);
  return () => {
    rmSync(root, { recursive: true, force: true });
    rmSync(bundles, { recursive: true, force: true });
  };
}
