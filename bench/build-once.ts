/** One build in its own process: prints {ms, timings, maxRssMb, report}. Args: pages, out, catalog[, now]. */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { build } from '../generator/build.js';

const [pages, out, catalog, now] = process.argv.slice(2);
const start = performance.now();
// A new ledger where the folder holds no tree yet; rebuilds and day-2 builds continue the one there (--init never replaces it).
const init = !existsSync(join(out!, 'v1'));
const report = await build({ pages: pages!, out: out!, catalog: catalog || undefined, now: now ?? '2026-10-14T00:30:00Z', init });
const ms = performance.now() - start;
process.stdout.write(
  JSON.stringify({
    ms,
    timings: report.timings,
    maxRssMb: process.resourceUsage().maxRSS / 1024,
    pages: report.pages_read,
    parsed: report.pages_parsed,
    files: report.files_written,
  }) + '\n',
);
