/**
 * Is this rebuild idle? The one question, asked in one place (decision 58): nothing the build would read has changed since the
 * build that wrote the previous tree (no page touched, as its parse cache has each page's size and mtime, and each
 * reading still accepted by the guards; the same catalogue, document information, public URL, parser version and
 * generator code), and that tree is intact as the cache names it. Then the previous tree is the answer, re-linked
 * whole, and nothing else is read. The same fingerprint, of what a full build read, is what the cache records.
 */
import { readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fg from 'fast-glob';
import type { Asset } from './catalog/catalog.js';
import type { ApiInfo } from './openapi/document.js';
import { sha256, treeHash } from './output/manifest.js';
import type { PreviousTree } from './previous/previous-tree.js';
import type { PageRef } from './site/discover.js';
import { pageGuard } from './site/guards.js';
import { PARSER_VERSION, reading, untouched, type ParseCache } from './site/read-site.js';

/** What the question reads: the opened inputs of this build, and what the previous build recorded. */
export interface IdleInputs {
  catalog: Asset[];
  apiInfo: ApiInfo | undefined;
  publicUrl: string | undefined;
  pagesDir: string;
  pages: PageRef[];
  previous: PreviousTree | null;
  cache: (ParseCache & { last_build?: { inputs: string; tree: string } }) | undefined;
  /** Pages the previous build read that are gone: never idle then. */
  vanished: number;
}

/** The parse cache to keep when the rebuild is idle, else null (the build reads on). */
export function idleCache(i: IdleInputs, at: string): ParseCache | null {
  const { previous, cache } = i;
  if (!previous?.localTree || !cache?.last_build || i.vanished) return null;
  if (treeHash(previous.manifest) !== cache.last_build.tree) return null;
  const same = untouchedSince(i.pagesDir, i.pages, cache, pageGuard(i.catalog, at));
  return same && fingerprint(i, same) === cache.last_build.inputs ? same : null;
}

/**
 * The previous cache's entries for these pages when every page is untouched since it was written and its reading
 * is not refused, else null.
 */
function untouchedSince(dir: string, pages: PageRef[], previous: ParseCache, refuse: ReturnType<typeof pageGuard>): ParseCache | null {
  if (previous.parser_version !== PARSER_VERSION) return null;
  const cache: ParseCache = { parser_version: PARSER_VERSION, pages: {} };
  for (const ref of pages) {
    const hit = previous.pages[ref.file];
    if (!untouched(hit, statSync(join(dir, ref.file)), ref) || refuse(reading(hit.result, ref), ref)) return null;
    cache.pages[ref.file] = hit;
  }
  return cache;
}

/**
 * Everything a build reads besides the previous tree: the pages (each by its hash, or its size and mtime where it
 * was not hashed), the catalogue and the document's information as they were read, the public URL, the code that
 * reads them.
 */
export function fingerprint(i: Pick<IdleInputs, 'catalog' | 'apiInfo' | 'publicUrl'>, cache: ParseCache): string {
  const pages = Object.entries(cache.pages)
    .map(([f, e]) => `${f}:${e.hash ?? `${e.size}:${e.mtimeMs}`}`)
    .sort()
    .join('\n');
  const info = i.apiInfo ? sha256(JSON.stringify(i.apiInfo)) : '';
  return sha256([generatorCode(), PARSER_VERSION, sha256(JSON.stringify(i.catalog)), i.publicUrl ?? '/', info, pages].join('\n'));
}

/**
 * The generator's own code, hashed: any change to what the build writes changes this, version bump or not, so
 * an idle rebuild never re-links a tree an older build wrote.
 */
let codeHash: string | undefined;
function generatorCode(): string {
  if (codeHash === undefined) {
    const dir = dirname(fileURLToPath(import.meta.url));
    const files = fg.sync(['**/*.{js,ts}', '!**/*.d.ts', '!**/*.map'], { cwd: dir }).sort();
    codeHash = sha256(files.map((f) => `${f}:${sha256(readFileSync(join(dir, f)))}`).join('\n'));
  }
  return codeHash;
}
