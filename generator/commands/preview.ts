/** `risk-readings preview`: a built tree as plain files, no auth. */
import { resolve } from 'node:path';
import { preview } from '../preview.js';
import { treeFolder } from './options.js';

export async function run(o: { public?: string; port: number; host: string }): Promise<void> {
  const dir = treeFolder('preview', o, resolve);
  const server = await preview(dir, o.port, o.host);
  const a = server.address() as { port: number };
  process.stdout.write(`previewing ${dir} at http://${o.host}:${a.port}/v1/ (plain files, no auth; Ctrl-C stops)\n`);
}
