/**
 * The market-wide inputs of a build: crypto fear & greed and peak/valley, each equity universe's sector
 * indicators (the feed first, then its widget strip), and the market-cap ranks that make the free tier. A market
 * page that failed under --keep-going keeps the previous tree's reading.
 */
import { firstMember } from './build-inputs.js';
import { UNIVERSES, type Asset } from './catalog/catalog.js';
import type { AssetRisk } from './api/asset-risk.js';
import { marketContexts } from './api/market-context.js';
import { FREE_TIER_SIZE } from './contract/plans.js';
import type { PageResult, ReadingKey, SectorReadings } from './site/readings.js';
import { marketFilesOf, registryOrder } from './site/registry.js';

const EQUITY_UNIVERSES = UNIVERSES.filter((u) => u !== 'crypto');

/** The previous tree's AssetRisk of each asset a build may carry readings from (read-inputs.ts says which). */
export type PreviousRisks = ReadonlyMap<string, AssetRisk | undefined>;

export type MarketReadings = ReturnType<typeof marketReadings>;

/**
 * `results` are the market pages read; `failed` the readings of market pages that failed under --keep-going,
 * which keep the previous tree's. Where two kinds yield the same reading (the feed and the widget strips), the
 * registry's order says which is read first (decision 64).
 */
export function marketReadings(
  results: PageResult[],
  failed: ReadonlySet<ReadingKey>,
  catalog: Asset[],
  previousRisks: PreviousRisks,
  warnings: string[],
) {
  const prevRisk = (symbol: string) => previousRisks.get(symbol);
  const ordered = [...results].sort((a, b) => registryOrder(a.kind) - registryOrder(b.kind));
  const first = <K extends ReadingKey>(key: K) => ordered.find((r) => r[key] !== undefined);
  const pages = (key: ReadingKey) => marketFilesOf(key).join(', ');

  // Market-wide readings; a market page that fails under --keep-going keeps the previous tree's reading.
  const firstOf = (universe: string) => {
    const a = firstMember(catalog, universe);
    return a ? prevRisk(a.symbol)?.market_context : undefined;
  };
  const cryptoMarket = {
    fear_greed: first('fear_greed')?.fear_greed ?? (failed.has('fear_greed') ? (firstOf('crypto')?.fear_greed ?? null) : null),
    peak_valley: first('peak_valley')?.peak_valley ?? (failed.has('peak_valley') ? (firstOf('crypto')?.peak_valley ?? null) : null),
  };
  if (!cryptoMarket.fear_greed) warnings.push(`crypto fear & greed: no reading (${pages('fear_greed')} missing or unreadable)`);
  if (!cryptoMarket.peak_valley) warnings.push(`crypto peak/valley: no reading (${pages('peak_valley')} missing or unreadable)`);

  const sectors: Partial<Record<string, SectorReadings>> = {};
  const sectorSources: Record<string, string | null> = {};
  for (const u of EQUITY_UNIVERSES) {
    const source = ordered.find((r) => r.sectors?.[u]);
    if (source) [sectors[u], sectorSources[u]] = [source.sectors![u]!, source.file];
    else {
      const prev = firstOf(u);
      if (prev?.fear_greed && failed.has('sectors')) {
        sectors[u] = { fear_greed: prev.fear_greed, peak_valley: prev.peak_valley!, macro_risk: prev.macro_risk! };
        sectorSources[u] = `${prev.fear_greed.source_page} (previous build)`;
      } else {
        sectorSources[u] = null;
        warnings.push(`${u}: no sector indicators (no sector page holds it: ${pages('sectors')})`);
      }
    }
  }
  const contexts = marketContexts(UNIVERSES, cryptoMarket, sectors);

  // The free tier: the ten catalogue crypto assets with the smallest market-cap rank.
  const ranks = new Map<string, number>();
  const ranking = first('ranking')?.ranking;
  const cryptoSymbols = new Set(catalog.filter((a) => a.asset_class === 'CRYPTO').map((a) => a.symbol));
  if (ranking) {
    for (const r of ranking) if (cryptoSymbols.has(r.symbol) && !ranks.has(r.symbol)) ranks.set(r.symbol, r.rank);
  } else {
    warnings.push(`market-cap ranking: ${pages('ranking')} missing or unreadable; ranks and free tier carried from the previous build`);
    for (const s of cryptoSymbols) {
      const rank = prevRisk(s)?.market_cap_rank;
      if (rank) ranks.set(s, rank);
    }
  }
  const freeTier = [...ranks.entries()]
    .sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, FREE_TIER_SIZE)
    .map(([s]) => s);

  return { contexts, sectorSources, ranks, freeTier };
}
