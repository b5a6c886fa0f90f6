/**
 * The previous tree as the build reads it: a ledger's rows come back as published, whoever laid the file out; a
 * ledger, catalogue, change feed or manifest that is not JSON, does not match the manifest, or is not the shape the
 * build reads, is refused with its path, before any of it is used.
 */
import { describe, expect, it } from 'vitest';
import { blankRow, type Ledger } from '../../../generator/api/history.js';
import { toJson } from '../../../generator/contract/json.js';
import { TREE } from '../../../generator/contract/tree.js';
import { digest, manifest } from '../../../generator/output/manifest.js';
import { openTree } from '../../../generator/previous/open-tree.js';

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
const catalog = { assets: { BTC: { asset_class: 'CRYPTO', universes: ['crypto'] } } };
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Doc = Record<string, any>;

/** A tree of these files' texts (the catalogue and the ledger by default), with a manifest listing them, read from memory. */
function treeOf(texts: Record<string, string>, editManifest: (m: Doc) => void = () => {}) {
  const all = { [TREE.catalog]: JSON.stringify(catalog), [TREE.historyFull('BTC')]: toJson(ledger), ...texts };
  const files = new Map<string, Uint8Array>(Object.entries(all).map(([p, t]) => [p, Buffer.from(t)]));
  const m = manifest(new Map([...files].map(([p, b]) => [p, digest(b)])), '2026-01-05T00:00:00Z', [], 'contract') as Doc;
  editManifest(m);
  files.set(TREE.manifest, Buffer.from(JSON.stringify(m)));
  return openTree('memory', async (p) => files.get(p), null);
}
const ledgerOf = (text: string) => treeOf({ [TREE.historyFull('BTC')]: text });

describe('PreviousTree.ledger', () => {
  it('reads the rows of a ledger as published, whoever laid the file out', async () => {
    for (const text of [toJson(ledger), JSON.stringify(ledger, null, 2)])
      expect(await (await ledgerOf(text)).ledger('BTC')).toEqual(ledger.data.rows);
  });

  it('refuses a ledger that is not JSON, or holds no rows, or a row that is not one, naming it', async () => {
    await expect((await ledgerOf('{"data": ')).ledger('BTC')).rejects.toThrow(/history\/full\.json is not JSON/);
    await expect((await ledgerOf('{"data": {}}')).ledger('BTC')).rejects.toThrow(/history\/full\.json has no data\.rows/);
    await expect((await ledgerOf('{"data": {"rows": [null]}}')).ledger('BTC')).rejects.toThrow(
      /history\/full\.json data\.rows\[0\] is not a history row/,
    );
  });
});

describe('the rest of the previous tree', () => {
  it('refuses a manifest that lists no catalogue (it would read as an empty tree) or an entry that is no size and hash', async () => {
    await expect(treeOf({}, (m) => delete m.files[TREE.catalog])).rejects.toThrow(/_manifest\.json lists no _catalog\.json/);
    await expect(treeOf({}, (m) => (m.files[TREE.historyFull('BTC')] = null))).rejects.toThrow(
      /_manifest\.json: files\["assets\/BTC\/history\/full\.json"\] is not a size and a sha256/,
    );
    await expect(treeOf({}, (m) => (m.files = []))).rejects.toThrow(/_manifest\.json is not a manifest/);
  });

  it('refuses a catalogue without its assets', async () => {
    for (const text of ['{}', '{"assets": []}', '{"assets": {"BTC": null}}'])
      await expect(treeOf({ [TREE.catalog]: text }), text).rejects.toThrow(/_catalog\.json has no assets, each an object/);
  });

  it('reads a change feed, and refuses one whose events or positions are not what the build reads', async () => {
    const feed = { started_at: '2026-01-04T00:30:00Z', events: [{ published_at: '2026-01-05T00:30:00Z' }], basic: [0] };
    expect(await (await treeOf({ [TREE.changes]: JSON.stringify(feed) })).changes()).toEqual(feed);
    expect(await (await treeOf({})).changes()).toBeUndefined();
    for (const [edit, message] of [
      [{ events: [1] }, /events\[0\] is not an event with a published_at/],
      [{ basic: [1] }, /basic is not a list of positions in events, ascending/],
      [{ started_at: null }, /has no started_at, events and basic/],
    ] as const) {
      const tree = await treeOf({ [TREE.changes]: JSON.stringify({ ...feed, ...edit }) });
      await expect(tree.changes()).rejects.toThrow(message);
    }
  });
});
