/** The manifest: every file of the tree with its size and SHA-256, for deploy syncs and the shim's strong ETags. */
import { createHash } from 'node:crypto';
import type { Manifest, ManifestEntry } from '../contract/shapes.js';

export type { Manifest, ManifestEntry } from '../contract/shapes.js';
export type Digest = Omit<ManifestEntry, 'encodings'>;

export const sha256 = (bytes: string | Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

export const digest = (bytes: string | Uint8Array): Digest => ({
  size: typeof bytes === 'string' ? Buffer.byteLength(bytes) : bytes.byteLength,
  sha256: sha256(bytes),
});

/** The manifest of a tree whose files have these entries (listed in path order, whatever order they came in). */
export function manifest(entries: Map<string, ManifestEntry>, builtAt: string, pages: string[], contract: string): Manifest {
  const out: Record<string, ManifestEntry> = {};
  for (const path of [...entries.keys()].sort()) out[path] = entries.get(path)!;
  return { schema: 1, built_at: builtAt, pages, contract, files: out };
}

/** A tree's identity: the hashes of all its files but the manifest (whose build time differs). */
export const treeHash = (m: Manifest): string => sha256(JSON.stringify(m.files));
