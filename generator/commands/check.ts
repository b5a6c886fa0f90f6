/** `risk-readings check`: validates a built tree; exit 1 with each problem named. */
import { resolve } from 'node:path';
import { checkTree } from '../check.js';
import { treeFolder } from './options.js';

export async function run(o: { public?: string; out?: string }): Promise<void> {
  const problems = await checkTree(treeFolder('check', o, resolve));
  for (const p of problems) process.stderr.write(`problem: ${p}\n`);
  process.stdout.write(problems.length ? `${problems.length} problem(s)\n` : 'ok\n');
  if (problems.length) process.exitCode = 1;
}
