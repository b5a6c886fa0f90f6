/** The manifest: every file of the tree with its size and SHA-256, for deploy syncs and the shim's strong ETags. */
import { createHash } from 'node:crypto';
import type { Encoding } from '../contract/encodings.js';

export interface Digest {
  size: number;
  sha256: string;
}
/** A file, and its compressed variants (decision 23) where it has them, each with its own digest. */
export interface ManifestEntry extends Digest {
  encodings?: Partial<Record<Encoding, Digest>>;
}
export interface Manifest {
  schema: 1;
  built_at: string;
  /** The source pages this tree answers for, so the next build can tell one that went missing. */
  pages?: string[];
  /**
   * SHA-256 of the closed schemas the files were validated against: a file unchanged under the same contract
   * needs no second schema pass, though the served openapi.json (carrying this build's examples) differs.
   */
  contract?: string;
  files: Record<string, ManifestEntry>;
}

export const sha256 = (bytes: string | Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

export const digest = (bytes: string | Uint8Array): Digest => ({
  size: typeof bytes === 'string' ? Buffer.byteLength(bytes) : bytes.byteLength,
  sha256: sha256(bytes),
});

export function manifest(files: Map<string, string>, builtAt: string, pages: string[], contract: string): Manifest {
  const out: Record<string, ManifestEntry> = {};
  for (const path of [...files.keys()].sort()) out[path] = digest(files.get(path)!);
  return { schema: 1, built_at: builtAt, pages, contract, files: out };
}
