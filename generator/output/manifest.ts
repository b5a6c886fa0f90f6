/** The manifest: every file of the tree with its size and SHA-256, for deploy syncs and the shim's strong ETags. */
import { createHash } from 'node:crypto';

export interface ManifestEntry { size: number; sha256: string }
export interface Manifest {
  schema: 1;
  built_at: string;
  /** The source pages this tree answers for, so the next build can tell one that went missing. */
  pages?: string[];
  files: Record<string, ManifestEntry>;
}

export const sha256 = (bytes: string | Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

export function manifest(files: Map<string, string>, builtAt: string, pages: string[]): Manifest {
  const out: Record<string, ManifestEntry> = {};
  for (const path of [...files.keys()].sort()) {
    const text = files.get(path)!;
    out[path] = { size: Buffer.byteLength(text), sha256: sha256(text) };
  }
  return { schema: 1, built_at: builtAt, pages, files: out };
}
