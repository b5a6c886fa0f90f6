/** `risk-readings inspect FILE...`: what the parsers extract from page files, under the API's own names. */
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import type { Asset } from './catalog/catalog.js';
import { classify } from './site/discover.js';
import { PageError } from './site/errors.js';
import { parseAs } from './site/parse-page.js';
import { READINGS, type PageResult, type ReadingKey } from './site/readings.js';
import type { PageKind } from './site/registry.js';

export interface Inspected {
  file: string;
  kind: PageKind | null;
  symbol: string | null;
  [reading: string]: unknown;
}

function presentable(r: PageResult): Omit<Inspected, 'file' | 'kind' | 'symbol'> {
  const out: Record<string, unknown> = {};
  // Under the API's names, from the registry of readings: an asset's reading as its AssetRisk field (a part, such as
  // twap_risk, joined to the field it adds to), a market-wide one under its own name.
  for (const [key, reading] of Object.entries(READINGS) as [ReadingKey, (typeof READINGS)[ReadingKey]][]) {
    const value = r[key];
    if (!value) continue;
    if (key === 'sectors') {
      const entries = Object.entries(r.sectors!);
      if (entries.length === 1) Object.assign(out, { universe: entries[0]![0] }, entries[0]![1]);
      else out.sectors = r.sectors;
    } else if (reading.scope === 'market') out[key] = value;
    else out[reading.field] = 'part' in reading ? { ...(out[reading.field] as object), ...value } : value;
  }
  return out;
}

export async function inspect(files: string[], catalog: Asset[]): Promise<{ items: Inspected[]; failed: number }> {
  const items: Inspected[] = [];
  let failed = 0;
  for (const path of files) {
    const file = basename(path);
    let bytes: Buffer;
    try {
      bytes = await readFile(path);
    } catch (e) {
      items.push({
        file: path,
        kind: null,
        symbol: null,
        error: `cannot read: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}`,
      });
      failed++;
      continue;
    }
    // The build's own discovery says what a file is, so inspect and build never disagree.
    const what = classify([file], catalog).pages[0];
    if (!what) {
      items.push({ file, kind: null, symbol: null, error: 'not a source page of the catalogue (ignored by the build)' });
      failed++;
      continue;
    }
    try {
      const result = parseAs(what.kind, bytes, file, false);
      items.push({ file, kind: what.kind, symbol: what.symbol, ...presentable(result) });
    } catch (e) {
      failed++;
      items.push({
        file,
        kind: what.kind,
        symbol: what.symbol,
        error: e instanceof PageError ? { field: e.field, found: e.found, message: e.message } : String((e as Error).message),
      });
    }
  }
  return { items, failed };
}

/** The human form: one block per file, one `path = value` line per number or word. */
export function inspectText(items: Inspected[]): string {
  const lines: string[] = [];
  const walk = (prefix: string, v: unknown) => {
    if (v && typeof v === 'object' && !Array.isArray(v)) for (const [k, x] of Object.entries(v)) walk(prefix ? `${prefix}.${k}` : k, x);
    else lines.push(`  ${prefix} = ${JSON.stringify(v)}`);
  };
  for (const { file, kind, symbol, ...rest } of items) {
    lines.push(`${file}  (${kind ?? 'unknown'}${symbol ? `, ${symbol}` : ''})`);
    walk('', rest);
  }
  return lines.join('\n') + '\n';
}
