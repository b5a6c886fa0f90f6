/**
 * The change feed as webhooks read it (decision 108): the published ledger with the catalogue beside it, read from
 * the origin the shim serves, so a delivery and `GET /v1/changes` cut from the same bytes. Runtime-neutral.
 */
import { TREE } from '../../generator/contract/index.js';
import type { Catalog, ChangeLedger } from '../../generator/contract/shapes.js';
import type { JsonCache } from '../origin.js';

export interface Feed {
  ledger: ChangeLedger;
  /** Indexes of the events a basic plan sees. */
  basic: ReadonlySet<number>;
  /** The catalogue's symbols: what a symbol filter may name. */
  symbols: ReadonlySet<string>;
  /** The universes an asset of the catalogue belongs to. */
  universesOf(symbol: string): readonly string[];
}

export function feedOf(ledger: ChangeLedger, catalog: Catalog): Feed {
  return {
    ledger,
    basic: new Set(ledger.basic),
    symbols: new Set(Object.keys(catalog.assets)),
    universesOf: (s) => catalog.assets[s]?.universes ?? [],
  };
}

/** The published feed, read again only when the tree's files change; null while the tree has none. */
export function publishedFeed(json: JsonCache): () => Promise<Feed | null> {
  let last: { tags: string; feed: Feed } | null = null;
  return async () => {
    const [ledger, catalog] = await Promise.all([json.get<ChangeLedger>(TREE.changes), json.get<Catalog>(TREE.catalog)]);
    if (!ledger || !catalog) return null;
    const tags = `${ledger.etag} ${catalog.etag}`;
    if (last?.tags !== tags) last = { tags, feed: feedOf(ledger.doc, catalog.doc) };
    return last.feed;
  };
}
