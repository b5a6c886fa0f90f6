/**
 * Every page kind the build reads (decision 64), one line each: the kind's name (the asset list's `pages` key) and its
 * descriptor (`site/kinds/<kind>.ts`). Discovery, parsing, the guards, the weekly archive, the readings carried
 * under --keep-going and the assembly of AssetRisk all derive from this object; adding a kind is its module, one
 * line here, its fixture template and its tests (docs/architecture.md, "Adding a page kind").
 *
 * Order matters twice: an asset's pages are listed in this order, and where two kinds yield the same reading (the
 * sector feed and the widget strips), the one listed first is read first.
 */
import type { ModelKey } from '../contract/constants.js';
import type { PageKindDescriptor } from './kind.js';
import { READINGS, type AssetReading, type ReadingKey } from './readings.js';
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

/**
 * What the build looks up in a registry of kinds, derived from it: the module's own below; a test derives them from a
 * registry of its own, with a fictional kind in it (test/generator/reading-registry.test.ts).
 *
 * @public
 */
export function registryOf<K extends string>(kinds: { [N in K]: PageKindDescriptor<N> }) {
  const list = Object.values(kinds) as PageKindDescriptor<K>[];
  const kind = (name: K) => kinds[name] as PageKindDescriptor<K>;
  return {
    /** The kinds, in the registry's order. */
    KIND_LIST: list,
    /** The file names of the market pages that yield `reading`, in the registry's order (for messages). */
    marketFilesOf: (reading: ReadingKey): string[] =>
      list.flatMap((k) => (k.published.by === 'market' && k.readings.includes(reading) ? k.published.files : [])),
    /** The readings the given kinds yield: what a page of theirs that failed stands for. */
    readingsOf: (kinds: Iterable<K>): Set<ReadingKey> => new Set([...kinds].flatMap((k) => kind(k).readings)),
    /**
     * The readings a page of this kind gives an asset with these catalogue models: those of its readings whose model
     * the asset lists, and those of their own. Empty for a market page, and for an asset that does not publish the kind.
     */
    readingsHad: (name: K, asset: { models: readonly string[] }): ReadingKey[] =>
      kind(name).readings.filter((r) => {
        const reading = READINGS[r];
        return reading.scope === 'asset' && (reading.model === null || asset.models.includes(reading.model satisfies ModelKey));
      }),
    /** Position in the registry, for reading results in its order. */
    registryOrder: (name: K): number => list.findIndex((k) => k.name === name),
  };
}

export const { KIND_LIST, marketFilesOf, readingsOf, readingsHad, registryOrder } = registryOf<PageKind>(_named);

/** How the report and the warnings name a reading: its AssetRisk field, or a part's own keys within it. */
function readingLabel(key: ReadingKey): string {
  const reading = READINGS[key] as AssetReading | (typeof READINGS)[ReadingKey];
  if (reading.scope === 'market') return reading.label;
  return reading.part ? `${reading.field}.${Object.keys(reading.none!)[0]}` : reading.field;
}

/** Readings named for a sentence: "gravity, twap and price". */
export const readingWords = (keys: readonly ReadingKey[]): string => {
  const words = keys.map(readingLabel);
  return words.length > 1 ? `${words.slice(0, -1).join(', ')} and ${words.at(-1)}` : (words[0] ?? 'nothing');
};
