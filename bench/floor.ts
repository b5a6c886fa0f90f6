/**
 * The build's floor: read every page and JSON.parse its Plotly traces, nothing else. Runs in its own process,
 * single-threaded; prints {ms, pages, bytes}.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv[2]!;
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.html'))
  .sort();
const start = performance.now();
let bytes = 0;
let figures = 0;
for (const f of files) {
  const html = readFileSync(join(dir, f), 'utf8');
  bytes += Buffer.byteLength(html);
  for (let at = html.indexOf('Plotly.newPlot('); at >= 0; at = html.indexOf('Plotly.newPlot(', at + 1)) {
    const open = html.indexOf('[', at);
    // Plotly writes `[traces], {layout}`: the first `],` before a `{` whose prefix parses is the array's end.
    for (let close = html.indexOf('],', open); close >= 0; close = html.indexOf('],', close + 2)) {
      if (!/^\s*\{/.test(html.slice(close + 2, close + 40))) continue;
      try {
        JSON.parse(html.slice(open, close + 1));
        figures++;
        break;
      } catch {
        // keep looking
      }
    }
  }
}
process.stdout.write(JSON.stringify({ ms: performance.now() - start, pages: files.length, figures, bytes }) + '\n');
