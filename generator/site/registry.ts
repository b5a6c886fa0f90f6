/**
 * Every page kind the build reads (decision 64), one line each: the kind's name (the asset list's `pages` key) and its
 * descriptor (`site/kinds/<kind>.ts`). Discovery, parsing, the guards, the weekly archive, the readings carried
 * under --keep-going and the assembly of AssetRisk all derive from this object; adding a kind is its module, one
 * line here, its fixture template and its tests (docs/architecture.md, "Adding a page kind").
 *
 * Order matters twice: an asset's pages are listed in this order, and where two kinds yield the same reading (the
 * sector feed and the widget strips), the one listed first is read first.
 */
import type { PageKindDescriptor } from './kind.js';
import type { ReadingKey } from './readings.js';
import { cryptoFearGreed } from './kinds/crypto-fear-greed.js';
import { cryptoGravity } from './kinds/crypto-gravity.js';
import { cryptoPeakValley } from './kinds/crypto-peak-valley.js';
import { cryptoPhase } from './kinds/crypto-phase.js';
import { cryptoSma20w } from './kinds/crypto-sma-20w.js';
import { cryptoTwapRisk } from './kinds/crypto-twap-risk.js';
import { dcaRegression } from './kinds/dca-regression.js';
import { equitySmaComposite } from './kinds/equity-sma-composite.js';
import { equityTwap } from './kinds/equity-twap.js';
import { equityValuation } from './kinds/equity-valuation.js';
import { marketCapRanking } from './kinds/market-cap-ranking.js';
import { sectorFeed } from './kinds/sector-feed.js';
import { sectorWidget } from './kinds/sector-widget.js';

export const KINDS = {
  crypto_gravity: cryptoGravity,
  crypto_twap_risk: cryptoTwapRisk,
  crypto_sma_20w: cryptoSma20w,
  crypto_phase: cryptoPhase,
  equity_twap: equityTwap,
  equity_sma_composite: equitySmaComposite,
  equity_valuation: equityValuation,
  dca_regression: dcaRegression,
  crypto_fear_greed: cryptoFearGreed,
  crypto_peak_valley: cryptoPeakValley,
  sector_feed: sectorFeed,
  sector_widget: sectorWidget,
  market_cap_ranking: marketCapRanking,
};

export type PageKind = keyof typeof KINDS;

// Each entry's key is its descriptor's own name: a line registering a module under another name does not compile.
const _named: { [K in PageKind]: PageKindDescriptor<K> } = KINDS;

/** The kinds, in the registry's order. */
export const KIND_LIST = Object.values(_named) as PageKindDescriptor<PageKind>[];

/** The file names of the market pages that yield `reading`, in the registry's order (for messages). */
export const marketFilesOf = (reading: ReadingKey): string[] =>
  KIND_LIST.flatMap((k) => (k.published.by === 'market' && k.readings.includes(reading) ? k.published.files : []));

/** The readings the given kinds yield: what a page of theirs that failed stands for. */
export const readingsOf = (kinds: Iterable<PageKind>): Set<ReadingKey> => new Set([...kinds].flatMap((k) => KINDS[k].readings));

/** Position in the registry, for reading results in its order. */
export const registryOrder = (kind: PageKind): number => KIND_LIST.findIndex((k) => k.name === kind);
