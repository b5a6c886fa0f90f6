/**
 * The docs page's package files inside the edge bundle: a Workers runtime has no file system, so the bundler
 * inlines them (esbuild and wrangler read `with { type: 'text' }`). Served as they are; the CDN in front
 * compresses them.
 */
import css from 'swagger-ui-dist/swagger-ui.css' with { type: 'text' };
import bundle from 'swagger-ui-dist/swagger-ui-bundle.js' with { type: 'text' };
import type { DocsFiles } from './docs.js';
import { sha256Hex } from './sha256.js';
import type { OriginFile } from './origin.js';

const encoder = new TextEncoder();
const TEXTS: Record<string, string> = { 'swagger-ui.css': css, 'swagger-ui-bundle.js': bundle };
const files = new Map<string, Promise<OriginFile>>();

export const bundledDocsFiles: DocsFiles = (name) => {
  let f = files.get(name);
  if (!f) {
    // The favicon is the one binary file: the page does without it at the edge.
    const text = TEXTS[name] ?? '';
    files.set(name, (f = sha256Hex(text).then((hash) => ({ bytes: encoder.encode(text) as Uint8Array<ArrayBuffer>, etag: `"${hash}"` }))));
  }
  return f;
};
