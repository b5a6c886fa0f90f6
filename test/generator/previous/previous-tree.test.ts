/**
 * The previous tree as the build reads it: a ledger's rows come back as published, whoever laid the file out, and a
 * ledger that is not JSON, or does not match the manifest, is refused with its path.
 */
import { describe, expect, it } from 'vitest';
import { blankRow, type Ledger } from '../../../generator/api/history.js';
import { toJson } from '../../../generator/contract/json.js';
import { TREE } from '../../../generator/contract/tree.js';
import { digest, manifest } from '../../../generator/output/manifest.js';
import { openTree } from '../../../generator/previous/previous-tree.js';

const ledger = {
  as_of: null,
  model_version: null,
  disclaimer: 'x',
  data: {
    symbol: 'BTC',
    total_row_count: 2,
    rows: [{ ...blankRow('2026-01-04', 'weekly_archive'), price: 90_000 }, blankRow('2026-01-05', 'as_published')],
  },
} as unknown as Ledger;

/** A tree of the ledger text given (and a manifest that lists it), read from memory. */
function treeOf(ledgerText: string) {
  const bytes = Buffer.from(ledgerText);
  const files = new Map<string, Uint8Array>([[TREE.historyFull('BTC'), bytes]]);
  const entries = new Map([[TREE.historyFull('BTC'), digest(bytes)]]);
  files.set(TREE.manifest, Buffer.from(toJson(manifest(entries, '2026-01-05T00:00:00Z', [], 'contract'))));
  return openTree('memory', async (p) => files.get(p), null);
}

describe('PreviousTree.ledger', () => {
  it('reads the rows of a ledger as published, whoever laid the file out', async () => {
    for (const text of [toJson(ledger), JSON.stringify(ledger, null, 2)])
      expect(await (await treeOf(text)).ledger('BTC')).toEqual(ledger.data.rows);
  });

  it('refuses a ledger that is not JSON, or holds no rows, naming it', async () => {
    await expect((await treeOf('{"data": ')).ledger('BTC')).rejects.toThrow(/history\/full\.json is not JSON/);
    await expect((await treeOf('{"data": {}}')).ledger('BTC')).rejects.toThrow(/history\/full\.json has no data\.rows/);
  });
});
