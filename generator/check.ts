/**
 * `risk-readings check`: the build's own validation, run on a tree already on disk (every file against the
 * closed contract, the invariants), plus the manifest: each file's size and SHA-256, and each compressed variant's,
 * which must also decompress to its file.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import fg from 'fast-glob';
import { ENCODING_SUFFIX, ENCODINGS } from './contract/encodings.js';
import { manifestEntryProblem } from './contract/manifest-check.js';
import { TREE } from './contract/tree.js';
import { liveTree } from './output/live-tree.js';
import { digest, type Manifest } from './output/manifest.js';
import { validateTree } from './output/validate.js';
import { openApiDocument } from './openapi/document.js';

const DECOMPRESS = { br: brotliDecompressSync, gzip: gunzipSync };

export async function checkTree(dir: string): Promise<string[]> {
  const root = liveTree(dir);
  if (!root) return [`${dir}/v1: no built tree here`];
  const paths = (await fg('**/*', { cwd: root, onlyFiles: true, dot: false })).sort();
  const bytes = new Map<string, Buffer>();
  for (let i = 0; i < paths.length; i += 64) {
    const chunk = paths.slice(i, i + 64);
    (await Promise.all(chunk.map((p) => readFile(join(root, p))))).forEach((b, k) => bytes.set(chunk[k]!, b));
  }
  const problems: string[] = [];
  const docs = new Map<string, unknown>();
  let manifest: Manifest | undefined;
  try {
    manifest = JSON.parse(bytes.get(TREE.manifest)?.toString('utf8') ?? 'null') ?? undefined;
  } catch (e) {
    problems.push(`${TREE.manifest}: not JSON (${(e as Error).message})`);
  }
  if (!manifest?.files) return [...problems, `${TREE.manifest}: absent or not a manifest`];
  const listed = new Set<string>([TREE.manifest]);
  const same = (a: Uint8Array, d: { size: number; sha256: string }) => {
    const x = digest(a);
    return x.size === d.size && x.sha256 === d.sha256;
  };
  for (const [path, entry] of Object.entries(manifest.files)) {
    listed.add(path);
    const odd = manifestEntryProblem(path, entry);
    if (odd) {
      problems.push(odd);
      continue;
    }
    const file = bytes.get(path);
    if (!file) {
      problems.push(`${path}: listed in ${TREE.manifest} but absent`);
      continue;
    }
    if (!same(file, entry)) problems.push(`${path}: size or sha256 differs from ${TREE.manifest}`);
    try {
      docs.set(path, JSON.parse(file.toString('utf8')));
    } catch (e) {
      problems.push(`${path}: not JSON (${(e as Error).message})`);
    }
    for (const e of ENCODINGS) {
      const d = entry.encodings?.[e];
      if (!d) continue;
      const vpath = path + ENCODING_SUFFIX[e];
      listed.add(vpath);
      const variant = bytes.get(vpath);
      if (!variant) problems.push(`${vpath}: listed in ${TREE.manifest} (encodings.${e}) but absent`);
      else if (!same(variant, d)) problems.push(`${vpath}: size or sha256 differs from ${TREE.manifest} (encodings.${e})`);
      else if (!DECOMPRESS[e](variant).equals(file)) problems.push(`${vpath}: does not decompress to ${path}`);
    }
  }
  for (const path of bytes.keys()) if (!listed.has(path)) problems.push(`${path}: not listed in ${TREE.manifest}`);
  docs.set(TREE.manifest, manifest);
  return [...problems, ...validateTree(docs, openApiDocument())];
}
