/**
 * Who owns a webhook endpoint, and with what plan (decision 108): a direct key's label, so a rolled key keeps its
 * endpoints (a key without a label owns its own), or a marketplace caller's user. The deliverer reads a direct
 * owner's plan from the key store as it is now, so a revoked or expired customer is sent nothing. Runtime-neutral.
 */
import { hasExpired, keyExpiry, PLANS, type KeyStore, type Plan } from '../../generator/contract/index.js';
import type { Caller, MarketplaceConfig } from '../credentials.js';
import type { HeaderSource } from '../exchange.js';
import { Refusal } from '../refusal.js';
import type { EndpointRecord } from './store.js';

/**
 * Whose endpoints a caller manages: a direct key's label (a key without one: the key itself), or a marketplace
 * caller's user, named by the user header of the name set its proxy secret came in (decision 20), never another:
 * a customer's own `x-marketplace-user` beside the marketplace's `x-rapidapi-user` names nobody. Without it the
 * caller is refused 401.
 */
export function ownerOf(caller: Caller, headers: HeaderSource, m: MarketplaceConfig): string {
  if (caller.quotaKey) return caller.label ? `label:${caller.label}` : caller.quotaKey;
  const name = caller.userHeader ?? `x-${(m.name ?? 'rapidapi').toLowerCase()}-user`;
  const user = headers.get(name)?.trim();
  if (!user || user.length > 256)
    throw new Refusal('unauthorized', `A marketplace caller manages webhooks as its user: send ${name} (at most 256 characters)`);
  return `marketplace:${user}`;
}

/** Each owner's highest plan among its keys in force, per key store (a reloaded file is a new store). */
const OWNERS = new WeakMap<KeyStore, Map<string, { plan: Plan; expiry: number }[]>>();

/** The plan an endpoint's owner has now: null when no key of it is in force (its endpoints wait). */
export function ownerPlan(keys: KeyStore | null, e: Pick<EndpointRecord, 'owner' | 'plan'>, now: number): Plan | null {
  if (e.owner.startsWith('marketplace:')) return e.plan;
  if (!keys) return null;
  let owners = OWNERS.get(keys);
  if (!owners) {
    owners = new Map();
    for (const rec of keys.values())
      for (const owner of [rec.label ? `label:${rec.label}` : `key:${rec.sha256}`]) {
        const held = owners.get(owner) ?? [];
        held.push({ plan: rec.plan, expiry: keyExpiry(rec) });
        owners.set(owner, held);
      }
    OWNERS.set(keys, owners);
  }
  const live = (owners.get(e.owner) ?? []).filter((k) => !hasExpired(k.expiry, now));
  return live.length ? PLANS[Math.max(...live.map((k) => PLANS.indexOf(k.plan)))]! : null;
}
