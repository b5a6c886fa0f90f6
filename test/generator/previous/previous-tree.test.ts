/**
 * The previous tree as the build reads it: a ledger's rows come back as the lines its file gave them, read in place,
 * so the next build carries them as they were published without parsing or serialising them again; a ledger
 * another writer laid out is parsed whole, and one that is not JSON is refused with its path.
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
  it("reads a ledger this writer wrote in place, as its file's lines", async () => {
    const tree = await treeOf(toJson(ledger));
    const read = (await tree.ledger('BTC'))!;
    expect(read.asWritten).toBe(true);
    expect([0, 1].map((i) => read.row(i))).toEqual(ledger.data.rows);
  });

  it('parses a ledger another writer laid out whole, so its rows are written anew', async () => {
    const tree = await treeOf(JSON.stringify(ledger, null, 2));
    const read = (await tree.ledger('BTC'))!;
    expect(read.asWritten).toBe(false);
    expect([0, 1].map((i) => read.row(i))).toEqual(ledger.data.rows);
  });

  it('refuses a ledger that is not JSON, or holds no rows, naming it', async () => {
    await expect((await treeOf('{"data": ')).ledger('BTC')).rejects.toThrow(/history\/full\.json is not JSON/);
    await expect((await treeOf('{"data": {}}')).ledger('BTC')).rejects.toThrow(/history\/full\.json has no data\.rows/);
  });
});
