/**
 * `--init` means "there is no history yet": a build given it refuses to start a new ledger where a published one
 * already is, in `--out` or in `--previous`, so a mistyped origin URL (which answers 404, "no tree") can never
 * replace a deployed ledger with an empty one (decision 63).
 */
import { BuildError } from './build-report.js';
import { EXIT } from './exit.js';
import { folderTree, type PreviousTree } from './previous/previous-tree.js';

/** The published history a tree holds: how many rows, over how many assets. */
async function publishedRows(tree: PreviousTree): Promise<{ rows: number; assets: number }> {
  let rows = 0;
  let assets = 0;
  for (const symbol of Object.keys(tree.catalog?.assets ?? {}).sort()) {
    const n = (await tree.ledger(symbol))?.length ?? 0;
    rows += n;
    if (n) assets++;
  }
  return { rows, assets };
}

/**
 * Throws (exit 2) when `--init` is given and `previous` (the tree `--previous` names, or `--out`'s) or `--out`'s own
 * tree holds published history rows; `previous` is null where `--previous` names no tree.
 */
export async function refuseInitOverLedger(previous: PreviousTree | null, previousSource: string, out: string): Promise<void> {
  const trees = [...(previous ? [{ tree: previous, option: previousSource === out ? '--out' : '--previous' }] : [])];
  if (previousSource !== out) {
    const own = await folderTree(out);
    if (own) trees.push({ tree: own, option: '--out' });
  }
  for (const { tree, option } of trees) {
    const held = await publishedRows(tree);
    if (!held.rows) continue;
    const startOver =
      option === '--out'
        ? `build into an empty --out, or move ${out}/v1 and ${out}/.trees aside first`
        : 'leave out --previous and build into an empty --out';
    throw new BuildError(
      `--init: ${option} ${tree.source} already holds a published ledger (${held.rows} history rows of ${held.assets} assets); ` +
        `--init starts a ledger only where there is none. To continue that ledger, build without --init; to start a new one ` +
        `on purpose, ${startOver}`,
      {},
      [`${tree.source}: holds ${held.rows} published history rows; --init would start a new ledger over them`],
      EXIT.usage,
    );
  }
}
