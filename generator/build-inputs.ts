/**
 * What the build's read step gives its plan: plain data, no behaviour (decision 65). Both steps import it and neither imports
 * the other (read-inputs.ts produces it, plan-tree.ts consumes it; build.ts runs them in turn).
 */
import type { Carried } from './site/carry.js';
import type { Asset, Universe } from './catalog/catalog.js';
import type { AssetRisk, ChangeLedger, HistoryRow } from './contract/shapes.js';
import type { PageRef } from './site/discover.js';
import type { PageResult } from './site/readings.js';
import type { PageKind } from './site/registry.js';

/** The previous tree's change feed and every asset's AssetRisk, which this refresh's events are measured from. */
export interface PreviousFeedRead {
  /** Where the previous tree was read from, for messages. */
  source: string;
  /** Its ledger; undefined for a tree built before the feed existed. */
  ledger: ChangeLedger | undefined;
  /** Each asset's AssetRisk as the previous tree published it. */
  risks: ReadonlyMap<string, AssetRisk>;
  /** Assets whose AssetRisk could not be read intact, with why: they raise no event this refresh. */
  unread: ReadonlyMap<string, string>;
}

export interface ReadInputs {
  catalog: Asset[];
  /** Every page found, read or not: the asset list names each asset's pages. */
  pages: PageRef[];
  /** The readings of the pages that were read. */
  results: PageResult[];
  /** Per asset, the previous tree's part of each reading of its pages that failed (read nothing): what they keep. */
  carried: ReadonlyMap<string, Carried>;
  /** The market page kinds that failed, likewise. */
  failedMarket: ReadonlySet<PageKind>;
  previous: {
    /** Each asset's published ledger rows; absent where it has none yet. */
    ledgers: ReadonlyMap<string, readonly HistoryRow[]>;
    /** The previous AssetRisk of each asset whose readings may be carried (read-inputs.ts says which). */
    risks: ReadonlyMap<string, AssetRisk | undefined>;
    /** The assets the previous tree published. */
    assets: string[];
    /** Absent with no previous tree. */
    feed?: PreviousFeedRead;
  };
}

/**
 * The asset whose previous market context stands for its universe's when a market page failed: the read step reads
 * its previous AssetRisk, the plan takes the context from it.
 */
export const firstMember = (catalog: Asset[], universe: string): Asset | undefined =>
  catalog.find((x) => x.universes.includes(universe as Universe));
