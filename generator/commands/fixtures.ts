/** `risk-readings fixtures`: the synthetic site as published on day N, the demo's and the tests' input. */
import { resolve } from 'node:path';
import { loadCatalog } from '../catalog/catalog.js';
import { writeSite } from '../../fixtures/synth/site.js';
import { progress } from './progress.js';

export interface FixturesFlags {
  out: string;
  day: number;
  assets?: number;
  seed: string;
  symbols?: string;
  historyStart?: string;
  catalog?: string;
}

export async function run(o: FixturesFlags): Promise<void> {
  const catalog = loadCatalog(o.catalog && resolve(o.catalog));
  const t = Date.now();
  const writing = progress('writing assets');
  const r = await writeSite({
    out: resolve(o.out),
    day: o.day,
    assets: o.assets,
    seed: o.seed,
    symbols: o.symbols?.split(','),
    historyStart: o.historyStart,
    catalog,
    progress: writing,
  }).finally(() => writing.end());
  process.stdout.write(
    `wrote ${r.files.length} pages for ${r.assets.length} assets (day ${o.day}) to ${resolve(o.out)} in ${((Date.now() - t) / 1000).toFixed(1)} s\n`,
  );
}
