/** `risk-readings diff`: what changed between two trees; exit 0 none, 1 changes, 2 trouble, 3 a history row lost. */
import { resolve } from 'node:path';
import { compareTrees, exitStatus, UnexpectedShape, UnknownAsset } from '../diff/compare.js';
import { asJson, human } from '../diff/format.js';
import { diskLoader, TreeTrouble } from '../diff/loader.js';

export async function run(oldDir: string, newDir: string, o: { json?: boolean; asset?: string }): Promise<void> {
  try {
    const result = await compareTrees(diskLoader(resolve(oldDir)), diskLoader(resolve(newDir)), o.asset);
    const status = exitStatus(result);
    process.stdout.write(o.json ? asJson(result, status) : human(result, !!process.stdout.isTTY && !process.env.NO_COLOR));
    process.exitCode = status;
  } catch (e) {
    if (!(e instanceof TreeTrouble || e instanceof UnknownAsset || e instanceof UnexpectedShape)) throw e;
    process.stderr.write(`risk-readings diff: ${e.message}\n`);
    process.exitCode = 2;
  }
}
