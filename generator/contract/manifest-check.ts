/**
 * What every reader of a tree's `_manifest.json` relies on before it uses one (the build reading the previous tree,
 * `check`, the Node server and the edge): files by path, each with a size and a SHA-256. The closed schema says the
 * rest; this is the part whose absence would read as an empty tree or fail with a TypeError. Each problem names
 * the file and the field.
 */
import type { Manifest } from './shapes.js';
import { TREE } from './tree.js';

/** Why one entry of `files` cannot be read; null when it can. */
export function manifestEntryProblem(path: string, entry: unknown): string | null {
  return isRecord(entry) && typeof entry.size === 'number' && typeof entry.sha256 === 'string'
    ? null
    : `${TREE.manifest}: files["${path}"] is not a size and a sha256`;
}

/** Why `m` cannot be read as a manifest; null when it can. */
function manifestProblem(m: unknown): string | null {
  if (!isRecord(m) || !isRecord(m.files) || typeof m.built_at !== 'string')
    return `${TREE.manifest} is not a manifest (expected built_at and files by path)`;
  for (const [path, entry] of Object.entries(m.files)) {
    const problem = manifestEntryProblem(path, entry);
    if (problem) return problem;
  }
  return null;
}

/** `m` as a manifest, or the error `fail` makes of why it is not one. */
export function asManifest(m: unknown, fail: (problem: string) => Error): Manifest {
  const problem = manifestProblem(m);
  if (problem) throw fail(problem);
  return m as Manifest;
}

export const isRecord = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);
