/** The docs page's files from the installed `swagger-ui-dist` package, read and compressed once, on first request. */
import { createRequire } from 'node:module';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { compress } from '../../generator/output/compress.js';
import { sha256 } from '../../generator/output/manifest.js';
import { loadedOnce, type DocsFiles } from '../docs.js';
import type { OriginFile } from '../origin.js';

export function packageDocsFiles(): DocsFiles {
  const dir = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  const load = async (name: string): Promise<OriginFile> => {
    const bytes = new Uint8Array(await readFile(join(dir, name)));
    if (name.endsWith('.png')) return { bytes, etag: `"${sha256(bytes)}"` };
    const [br, gzip] = await Promise.all([compress(bytes, 'br'), compress(bytes, 'gzip')]);
    const rep = (b: Uint8Array) => ({ bytes: new Uint8Array(b), etag: `"${sha256(b)}"` });
    return { ...rep(bytes), encoded: { br: rep(br), gzip: rep(gzip) } };
  };
  return loadedOnce(load);
}
