/** Maps the files of a pages folder onto catalogue assets and page kinds, by the registry's file names. */
import { lstatSync, realpathSync } from 'node:fs';
import { join, sep } from 'node:path';
import fg from 'fast-glob';
import type { Asset } from '../catalog/catalog.js';
import { KIND_LIST, readingsHad, type PageKind } from './registry.js';

export interface PageRef {
  file: string;
  kind: PageKind;
  symbol: string | null;
}

export interface Discovery {
  pages: PageRef[];
  /** Expected asset pages that are absent: the model reads null, with a warning. */
  missing: { symbol: string; kind: PageKind; file: string }[];
  /** Files that are not a source the catalogue asks for (other page families, unknown assets, unlisted models). */
  ignored: string[];
  /** Links in the folder whose target lies outside it: never read, so the build reads only what the folder holds. */
  outside: { file: string; target: string }[];
}

/** Each market page's file name, to its kind (from the registry). */
const MARKET_FILES: ReadonlyMap<string, PageKind> = new Map(
  KIND_LIST.flatMap((k) => (k.published.by === 'market' ? k.published.files.map((f) => [f, k.name] as const) : [])),
);
/** The kind of a market page's file name, if it is one. */
export const marketKindOf = (file: string): PageKind | undefined => MARKET_FILES.get(file);

/** The file names an asset's models are published under, as the site spells them, in the registry's order of kinds. */
export function expectedPages(
  a: Pick<Asset, 'file_id' | 'asset_class'> & { models: readonly string[] },
): { kind: PageKind; names: string[] }[] {
  const out: { kind: PageKind; names: string[] }[] = [];
  for (const { name, published } of KIND_LIST) {
    if (published.by !== 'asset' || (published.assetClass !== 'ANY' && published.assetClass !== a.asset_class)) continue;
    if (readingsHad(name, a).length) out.push({ kind: name, names: published.files(a.file_id) });
  }
  return out;
}

/** Classify a list of file names (base names in one folder). */
export function classify(files: string[], catalog: Asset[]): Discovery {
  const present = new Set(files);
  const used = new Set<string>();
  const pages: PageRef[] = [];
  const missing: Discovery['missing'] = [];
  for (const a of catalog) {
    for (const { kind, names } of expectedPages(a)) {
      const file = names.find((n) => present.has(n));
      if (file) {
        pages.push({ file, kind, symbol: a.symbol });
        used.add(file);
      } else missing.push({ symbol: a.symbol, kind, file: names[0]! });
    }
  }
  for (const f of files) {
    const kind = MARKET_FILES.get(f);
    if (kind) {
      pages.push({ file: f, kind, symbol: null });
      used.add(f);
    }
  }
  const ignored = files.filter((f) => !used.has(f) && (f.endsWith('.html') || f.endsWith('.json')) && f !== 'catalog.json').sort();
  pages.sort((x, y) => (x.file < y.file ? -1 : x.file > y.file ? 1 : 0));
  return { pages, missing, ignored, outside: [] };
}

export async function discover(dir: string, catalog: Asset[]): Promise<Discovery> {
  const files = await fg(['*.html', '*.json'], { cwd: dir, onlyFiles: true, caseSensitiveMatch: true, dot: false });
  const root = realpathSync(dir);
  const outside: Discovery['outside'] = [];
  const inside = files.filter((f) => {
    const path = join(dir, f);
    if (!lstatSync(path).isSymbolicLink()) return true;
    let target: string;
    try {
      target = realpathSync(path);
    } catch {
      target = '(nothing: a broken link)';
    }
    if (target.startsWith(root + sep)) return true;
    outside.push({ file: f, target });
    return false;
  });
  return { ...classify(inside, catalog), outside };
}
