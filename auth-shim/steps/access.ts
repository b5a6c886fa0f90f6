/**
 * Step: access. What the caller may read, against the build's catalogue (`_catalog.json`) and the caller's plan:
 * the canonical symbol or universe (decision 11), 404 for one the service does not have, 403 plan_required for
 * one the plan does not cover (decisions 9 and 15). Each check follows the shape check of its parameter.
 */
import { PLAN_LIMITS, type Plan } from '../../generator/contract/index.js';
import type { Catalog } from '../../generator/contract/shapes.js';
import { Refusal } from '../refusal.js';
import { symbolParam, universeParam } from './parameters.js';

const FREE_NOTE = 'The free (basic) plan covers the top 10 crypto assets by market cap';

/** A request string looks up only an object's own keys, never its prototype's (`constructor`, `__proto__`). */
const ownValue = <T>(o: Record<string, T>, key: string): T | undefined => (Object.hasOwn(o, key) ? o[key] : undefined);

/** The canonical symbol of a served asset, or undefined. */
export const canonicalSymbol = (c: Catalog, symbol: string): string | undefined => ownValue(c.index, symbol.toUpperCase());

/** The canonical symbol of an asset the plan covers. */
export function coveredAsset(c: Catalog, symbol: string, plan: Plan): string {
  const canonical = canonicalSymbol(c, symbolParam(symbol));
  if (!canonical) throw new Refusal('unknown_asset', `No asset ${symbol.toUpperCase()} is served`);
  if (plan === 'basic' && !c.assets[canonical]!.free_tier)
    throw new Refusal('plan_required', `${canonical} requires the pro or ultra plan; your plan is basic. ${FREE_NOTE}.`);
  return canonical;
}

/** The same, for an asset that has a DCA signal. */
export function signalAsset(c: Catalog, symbol: string, plan: Plan): string {
  const canonical = coveredAsset(c, symbol, plan);
  if (!c.assets[canonical]!.dca_signal) throw new Refusal('no_signal', `${canonical} has no regression model, so no DCA signal`);
  return canonical;
}

/** A universe the plan covers: all five on paid plans, crypto only on basic. */
export function coveredUniverse(c: Catalog, name: string, plan: Plan): string {
  const asked = universeParam(name).toLowerCase();
  const universe = Object.keys(c.universes).find((u) => u === asked);
  if (!universe) throw new Refusal('unknown_universe', `No universe ${asked}; the universes are ${Object.keys(c.universes).join(', ')}`);
  if (plan === 'basic' && universe !== 'crypto')
    throw new Refusal(
      'plan_required',
      `The ${universe} summary requires the pro or ultra plan; your plan is basic. ${FREE_NOTE}, and the crypto summary.`,
    );
  return universe;
}

/** The bulk endpoint is for paid plans, whatever is asked of it. */
export function bulkAllowed(plan: Plan): void {
  if (!PLAN_LIMITS[plan].bulk)
    throw new Refusal(
      'plan_required',
      `The bulk endpoint requires the pro or ultra plan; your plan is basic. ${FREE_NOTE}, one asset per request.`,
    );
}
