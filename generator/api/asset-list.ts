/** `GET /v1/assets`: one document per plan (the list depends on the plan only). */
import type { Asset } from '../catalog/catalog.js';
import type { AssetRisk } from './asset-risk.js';
import { DISCLAIMER, newest } from './envelope.js';
import { FREE_TIER_RULE, type Plan } from '../contract/plans.js';

export function assetList(
  plan: Plan,
  catalog: Asset[],
  risks: Map<string, AssetRisk>,
  pages: Map<string, Record<string, string>>,
  freeTier: string[],
) {
  const visible = plan === 'basic' ? catalog.filter((a) => freeTier.includes(a.symbol)) : catalog;
  const entries = visible.map((a) => {
    const r = risks.get(a.symbol)!;
    return {
      symbol: a.symbol,
      name: a.name,
      asset_class: a.asset_class,
      universes: [...a.universes],
      free_tier: r.free_tier,
      as_of: r.as_of,
      models: [...a.models].sort(),
      pages: pages.get(a.symbol) ?? {},
    };
  });
  const universes: Record<string, string[]> = {};
  for (const u of [...new Set(catalog.flatMap((a) => a.universes))].sort())
    universes[u] = entries.filter((e) => e.universes.includes(u)).map((e) => e.symbol);
  return {
    // The list carries no model reading, only each asset's as_of: model_version is null (decision 16).
    as_of: newest(entries.map((e) => e.as_of)),
    model_version: null,
    disclaimer: DISCLAIMER,
    data: {
      assets: entries,
      universes,
      free_tier: { rule: FREE_TIER_RULE, symbols: [...freeTier] },
      asset_count: entries.length,
      total_asset_count: catalog.length,
      tier: plan,
    },
  };
}
