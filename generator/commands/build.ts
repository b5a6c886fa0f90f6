/** `risk-readings build`: runs the build and reports it; the exit status is decision 27's (exit.ts). */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { build, BuildError, type BuildReport } from '../build.js';
import { EXIT } from '../exit.js';
import { isUrl } from '../previous/previous-tree.js';
import { progress } from './progress.js';
import { readingWords } from '../site/registry.js';

export interface BuildFlags {
  pages: string;
  out: string;
  previous?: string;
  init?: boolean;
  catalog?: string;
  now?: string;
  publicUrl?: string;
  apiInfo?: string;
  keepGoing?: boolean;
  json?: boolean;
  jobs?: number;
}

/**
 * The catalogue a build reads: --catalog, else the pages folder's own catalog.json (the synthetic site carries the
 * assets it was written for), else the committed one.
 */
function catalogOf(o: BuildFlags): string | undefined {
  if (o.catalog) return resolve(o.catalog);
  const own = join(resolve(o.pages), 'catalog.json');
  if (!existsSync(own)) return undefined;
  process.stderr.write(`catalogue: ${own} (the pages folder's own)\n`);
  return own;
}

export async function run(o: BuildFlags): Promise<void> {
  const out = resolve(o.out);
  const previous = o.previous && (isUrl(o.previous) ? o.previous : resolve(o.previous));
  const reading = progress('reading pages');
  try {
    const report = await build({
      pages: resolve(o.pages),
      out,
      previous,
      previousToken: process.env.RISK_READINGS_PREVIOUS_TOKEN,
      catalog: catalogOf(o),
      now: o.now,
      keepGoing: !!o.keepGoing,
      init: !!o.init,
      jobs: o.jobs,
      publicUrl: o.publicUrl,
      apiInfo: o.apiInfo && resolve(o.apiInfo),
      progress: reading,
    });
    reading.end();
    const code = report.carried.length ? EXIT.carried : EXIT.published;
    printReport(report);
    process.stderr.write(
      code === EXIT.carried ? `built ${out}/v1, carrying ${report.carried.length} reading(s) forward (exit 4)\n` : `built ${out}/v1\n`,
    );
    if (o.json) process.stdout.write(jsonReport(code === EXIT.carried ? 'published_with_carried' : 'published', code, report, out));
    process.exitCode = code;
  } catch (e) {
    reading.end();
    if (!(e instanceof BuildError)) {
      process.stderr.write(`build failed: internal error: ${(e as Error).message}\n`);
      if (process.env.RISK_READINGS_DEBUG) process.stderr.write(`${(e as Error).stack}\n`);
      if (o.json) process.stdout.write(jsonReport('failed', EXIT.input, { errors: [`internal error: ${(e as Error).message}`] }, out));
      process.exitCode = EXIT.input;
      return;
    }
    printReport(e.report, true);
    for (const p of e.problems.slice(0, 50)) if (!e.report.errors?.includes(p)) process.stderr.write(`problem: ${p}\n`);
    if (e.problems.length > 50) process.stderr.write(`problem: ... and ${e.problems.length - 50} more\n`);
    process.stderr.write(`build failed: ${e.message}\n`);
    if (o.json) process.stdout.write(jsonReport('failed', e.exitCode, e.report, out, { message: e.message, problems: e.problems }));
    process.exitCode = e.exitCode;
  }
}

/** The report for a person, on stderr. */
function printReport(r: Partial<BuildReport>, failed = false) {
  const say = (line: string) => process.stderr.write(line + '\n');
  if (r.assets !== undefined)
    say(
      `assets ${r.assets ?? '?'} · pages ${r.pages_read ?? '?'} (parsed ${r.pages_parsed ?? 0}, unchanged ${r.pages_reused ?? 0}, unreadable ${r.pages_unreadable ?? 0}) · files ${r.files_written ?? 0} (linked ${r.files_linked ?? 0}) · warnings ${r.warnings?.length ?? 0} · errors ${r.errors?.length ?? 0} · carried ${r.carried?.length ?? 0}`,
    );
  // A failed build published nothing: its ledger was to start or continue, and did not.
  const ledger = failed ? ['would start new (--init)', 'would continue from'] : ['started new (--init)', 'continued from'];
  if (r.previous !== undefined) say(r.previous === null ? `ledger: ${ledger[0]}` : `ledger: ${ledger[1]} ${r.previous}`);
  for (const t of r.tidied ?? []) say(`tidied: ${t}`);
  if (r.sector_sources)
    say(
      `sector source: ${Object.entries(r.sector_sources)
        .map(([u, f]) => `${u} ← ${f ?? 'none'}`)
        .join(', ')}`,
    );
  if (r.ignored?.length) say(`ignored (not a source page): ${r.ignored.join(', ')}`);
  for (const w of r.warnings ?? []) say(`warning: ${w}`);
  for (const e of r.errors ?? []) say(`error: ${e}`);
  for (const c of r.carried ?? [])
    say(
      `carried: ${c.file} (${c.reason}): ${c.symbol ?? 'the market'} keeps ${c.readings.length ? `its previous ${readingWords(c.readings)}` : 'nothing'}`,
    );
  for (const c of r.would_carry ?? [])
    say(`with --keep-going: ${c.file} (${c.reason}) would be carried: ${c.symbol ?? 'market'} would keep its previous ${c.kind} reading`);
}

/** `build --json`: the report as one JSON object on stdout, whatever the outcome. */
function jsonReport(status: string, exitCode: number, r: Partial<BuildReport>, out: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ status, exit_code: exitCode, out: `${out}/v1`, ...extra, ...r }) + '\n';
}
