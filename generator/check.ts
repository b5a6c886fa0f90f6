/** `risk-readings check --out DIR`: the build's own validation, run on a tree already on disk, plus the manifest. */
import { TREE } from './contract/tree.js';
import { sha256, type Manifest } from './output/manifest.js';
import { validateTree } from './output/validate.js';
import { readTree } from './output/write-tree.js';

export async function checkTree(dir: string): Promise<string[]> {
  const texts = await readTree(dir);
  if (texts.size === 0) return [`${dir}/v1: no built tree here`];
  const docs = new Map<string, unknown>();
  const problems: string[] = [];
  for (const [path, text] of texts) {
    try {
      docs.set(path, JSON.parse(text));
    } catch (e) {
      problems.push(`${path}: not JSON (${(e as Error).message})`);
    }
  }
  const manifest = docs.get(TREE.manifest) as Manifest | undefined;
  if (!manifest) problems.push(`${TREE.manifest}: absent`);
  else {
    for (const [path, text] of texts) {
      if (path === TREE.manifest) continue;
      const entry = manifest.files[path];
      if (!entry) problems.push(`${path}: not listed in ${TREE.manifest}`);
      else if (entry.size !== Buffer.byteLength(text) || entry.sha256 !== sha256(text)) problems.push(`${path}: size or sha256 differs from ${TREE.manifest}`);
    }
    for (const path of Object.keys(manifest.files)) if (!texts.has(path)) problems.push(`${path}: listed in ${TREE.manifest} but absent`);
  }
  return [...problems, ...validateTree(docs)];
}
