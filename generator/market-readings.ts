/**
 * The market-wide inputs of a build: crypto fear & greed and peak/valley, each equity universe's sector
 * indicators (the feed first, then its widget strip), and the market-cap ranks that make the free tier. A market
 * page that failed under --keep-going keeps the previous tree's reading.
 */
import { UNIVERSES, type Asset, type Universe } from './catalog/catalog.js';
import type { AssetRisk } from './api/asset-risk.js';
import { marketContexts } from './api/market-context.js';
import { FREE_TIER_SIZE } from './contract/plans.js';
import type { PageKind, PageResult, SectorReadings } from './site/readings.js';

const EQUITY_UNIVERSES = UNIVERSES.filter((u) => u !== 'crypto');

/** The previous tree's AssetRisk of each asset a build may carry readings from (read-inputs.ts says which). */
export type PreviousRisks = ReadonlyMap<string, AssetRisk | undefined>;

export type MarketReadings = ReturnType<typeof marketReadings>;

export function marketReadings(
  results: PageResult[],
  failedMarket: ReadonlySet<PageKind>,
  catalog: Asset[],
  previousRisks: PreviousRisks,
  warnings: string[],
) {
  const prevRisk = (symbol: string) => previousRisks.get(symbol);
  const byKind = (kind: PageKind) => results.filter((r) => r.kind === kind);

  // Market-wide readings; a market page that fails under --keep-going keeps the previous tree's reading.
  const firstOf = (universe: string) => {
    const a = firstMember(catalog, universe);
    return a ? prevRisk(a.symbol)?.market_context : undefined;
  };
  const cryptoMarket = {
    fear_greed:
      byKind('crypto_fear_greed')[0]?.fear_greed ??
      (failedMarket.has('crypto_fear_greed') ? (firstOf('crypto')?.fear_greed ?? null) : null),
    peak_valley:
      byKind('crypto_peak_valley')[0]?.peak_valley ??
      (failedMarket.has('crypto_peak_valley') ? (firstOf('crypto')?.peak_valley ?? null) : null),
  };
  if (!cryptoMarket.fear_greed) warnings.push('crypto fear & greed: no reading (BTC_Unified_FNG_Matrix.html missing or unreadable)');
  if (!cryptoMarket.peak_valley) warnings.push('crypto peak/valley: no reading (crypto_risk_normalized.html missing or unreadable)');

  const sectors: Partial<Record<string, SectorReadings>> = {};
  const sectorSources: Record<string, string | null> = {};
  const feed = byKind('sector_feed')[0];
  const widgets = byKind('sector_widget');
  for (const u of EQUITY_UNIVERSES) {
    const fromFeed = feed?.sectors?.[u];
    const widget = widgets.find((w) => w.sectors?.[u]);
    if (fromFeed) [sectors[u], sectorSources[u]] = [fromFeed, feed!.file];
    else if (widget) [sectors[u], sectorSources[u]] = [widget.sectors![u]!, widget.file];
    else {
      const prev = firstOf(u);
      if (prev?.fear_greed && (failedMarket.has('sector_feed') || failedMarket.has('sector_widget'))) {
        sectors[u] = { fear_greed: prev.fear_greed, peak_valley: prev.peak_valley!, macro_risk: prev.macro_risk! };
        sectorSources[u] = `${prev.fear_greed.source_page} (previous build)`;
      } else {
        sectorSources[u] = null;
        warnings.push(`${u}: no sector indicators (neither sector_feed.json nor its widget strip holds it)`);
      }
    }
  }
  const contexts = marketContexts(UNIVERSES, cryptoMarket, sectors);

  // The free tier: the ten catalogue crypto assets with the smallest market-cap rank.
  const ranks = new Map<string, number>();
  const ranking = byKind('market_cap_ranking')[0]?.ranking;
  const cryptoSymbols = new Set(catalog.filter((a) => a.asset_class === 'CRYPTO').map((a) => a.symbol));
  if (ranking) {
    for (const r of ranking) if (cryptoSymbols.has(r.symbol) && !ranks.has(r.symbol)) ranks.set(r.symbol, r.rank);
  } else {
    warnings.push(
      'market-cap ranking: Crypto_Story_Galaxy.html missing or unreadable; ranks and free tier carried from the previous build',
    );
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

/** The asset whose previous market context stands for its universe's when a market page failed. */
export const firstMember = (catalog: Asset[], universe: string): Asset | undefined =>
  catalog.find((x) => x.universes.includes(universe as Universe));
