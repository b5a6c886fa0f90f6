/** `risk-readings inspect`: what the parsers extract from page files; exit 1 when a file cannot be read. */
import { resolve } from 'node:path';
import { loadCatalog } from '../catalog/catalog.js';
import { inspect, inspectText } from '../inspect.js';

export async function run(files: string[], o: { json?: boolean; catalog?: string }): Promise<void> {
  const { items, failed } = await inspect(files, loadCatalog(o.catalog && resolve(o.catalog)));
  process.stdout.write(o.json ? JSON.stringify(items, null, 2) + '\n' : inspectText(items));
  if (failed) process.exitCode = 1;
}
