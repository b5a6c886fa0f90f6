/**
 * The previous tree as the build reads it: a ledger's rows come back with the text its file gave each of them,
 * so the next build writes carried rows as they were published without serialising them again.
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
  data: { symbol: 'BTC', rows: [{ ...blankRow('2026-01-04', 'weekly_archive'), price: 90_000 }, blankRow('2026-01-05', 'as_published')] },
} as unknown as Ledger;

/** A tree of the ledger text given (and a manifest that lists it), read from memory. */
function treeOf(ledgerText: string) {
  const bytes = Buffer.from(ledgerText);
  const files = new Map<string, Uint8Array>([[TREE.historyFull('BTC'), bytes]]);
  const entries = new Map([[TREE.historyFull('BTC'), digest(bytes)]]);
  files.set(TREE.manifest, Buffer.from(toJson(manifest(entries, '2026-01-05T00:00:00Z', [], 'contract'))));
  return openTree('memory', async (p) => files.get(p), null);
}

describe('PreviousTree.rowTexts', () => {
  it('holds each row of a ledger read, as its file spells it', async () => {
    const tree = await treeOf(toJson(ledger));
    const read = (await tree.ledger('BTC'))!;
    expect(read.data.rows.map((r) => tree.rowTexts.get(r))).toEqual(ledger.data.rows.map((r) => JSON.stringify(r)));
  });

  it('holds nothing for a ledger another writer laid out, whose rows are then serialised anew', async () => {
    const tree = await treeOf(JSON.stringify(ledger, null, 2));
    const read = (await tree.ledger('BTC'))!;
    expect(read.data.rows.map((r) => tree.rowTexts.get(r))).toEqual([undefined, undefined]);
  });
});
