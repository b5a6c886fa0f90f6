/** Credentials (spec Authentication, decisions 12, 13 and 37): direct keys, their expiry, and the marketplace pair. */
import { PLANS, type Plan } from '../generator/contract/plans.js';
import type { HeaderSource } from './exchange.js';
import { next, type Maybe } from './maybe.js';
import { sha256 } from './sha256.js';

export { keyStoreFromJson, type KeyStore } from '../generator/contract/keys.js';
import { hasExpired, keyExpiry, keyLimits, type KeyLimits, type KeyRecord } from '../generator/contract/keys.js';

/** Compares two secrets in time independent of where they differ: both are hashed to 32 bytes first. */
export async function constantTimeEqual(a: string, b: string): Promise<boolean> {
  const [u, v] = await Promise.all([sha256(a), sha256(b)]);
  let diff = 0;
  for (let i = 0; i < u.length; i++) diff |= u[i]! ^ v[i]!;
  return diff === 0;
}

export interface Caller {
  plan: Plan;
  /** Who quotas are counted against; null when the marketplace counts them (decision 13 b). */
  quotaKey: string | null;
  /** A short name for logs that is not the key: `key:` and the first 8 hex digits of its hash, as `keys list` shows. */
  id: string;
  /** The key's label (null for a marketplace caller the proxy secret admitted). */
  label: string | null;
  /** The key's expiry, ISO 8601 (decision 37); null when it does not expire or the marketplace admitted the caller. */
  expires: string | null;
  /** The same in milliseconds, read once when the key is first looked up: Infinity when it does not expire. */
  expiry: number;
  /**
   * The per-minute and per-month limits in effect (decision 106): the key's own where its entry has them, else its
   * plan's. The key's `meta` is never copied here: nothing a caller is answered or a log line is written from holds it.
   */
  limits: KeyLimits;
  /**
   * For a caller the proxy secret admitted: the header naming its user, of the same name set the secret came in
   * (`x-rapidapi-user`), which the marketplace that knows the secret sets. Absent for a key's caller.
   */
  userHeader?: string;
}

/** Whether the caller's key has expired at `now` (decision 37): a comparison, so a known key stays one map lookup. */
export const expired = (caller: Caller, now: number): boolean => hasExpired(caller.expiry, now);

/** The caller a stored key stands for. */
export const keyCaller = (rec: KeyRecord): Caller => ({
  plan: rec.plan,
  quotaKey: `key:${rec.sha256}`,
  id: `key:${rec.sha256.slice(0, 8)}`,
  label: rec.label,
  expires: rec.expires ?? null,
  expiry: keyExpiry(rec),
  limits: keyLimits(rec),
});

export interface MarketplaceConfig {
  host?: string;
  secret?: string;
  /** The marketplace's own name in its header names, `x-<name>-key` (decision 20); default `rapidapi`. */
  name?: string;
}

const DEFAULT_MARKETPLACE_NAME = 'rapidapi';

/** The header names one form of the marketplace pair arrives under. */
interface PairNames {
  key: string;
  host: string;
  secret: string;
  subscription: string;
  user: string;
  /** The caller the proxy secret admits under these names, per subscription: the marketplace counts its quotas. */
  subscribers: Readonly<Record<Plan, Caller>>;
}

/**
 * The header names a marketplace pair may arrive under: the spec's neutral prefix, then the marketplace's own.
 * Made once per configuration: a name built per request is a new string that every header lookup must first find
 * in V8's string table.
 */
const PAIRS = new WeakMap<MarketplaceConfig, PairNames[]>();
function pairNames(m: MarketplaceConfig): PairNames[] {
  let names = PAIRS.get(m);
  if (!names) {
    const prefixes = ['x-marketplace-', `x-${(m.name ?? DEFAULT_MARKETPLACE_NAME).toLowerCase()}-`];
    names = prefixes.map((p) => ({
      key: `${p}key`,
      host: `${p}host`,
      secret: `${p}proxy-secret`,
      subscription: `${p}subscription`,
      user: `${p}user`,
      subscribers: subscribers(`${p}user`),
    }));
    PAIRS.set(m, names);
  }
  return names;
}

/** Every credential header the shim reads, for `Vary` (decision 20). */
export function credentialHeaders(m: MarketplaceConfig): string[] {
  return ['x-api-key', ...pairNames(m).flatMap((n) => [n.key, n.host, n.secret, n.subscription])];
}

/**
 * The callers a proxy secret admits, one per subscription the marketplace names, each knowing the header its user
 * is named in: a customer may add headers of the other name set, which the marketplace passes on untouched.
 */
const subscribers = (userHeader: string): Readonly<Record<Plan, Caller>> =>
  Object.fromEntries(
    PLANS.map((plan) => [
      plan,
      Object.freeze({
        plan,
        quotaKey: null,
        id: `marketplace:${plan}`,
        label: null,
        expires: null,
        expiry: Infinity,
        limits: keyLimits({ plan }),
        userHeader,
      }),
    ]),
  ) as Record<Plan, Caller>;

// A Map, not an object literal: a header value such as `constructor` or `__proto__` must find nothing.
const SUBSCRIPTIONS: ReadonlyMap<string, Plan> = new Map([
  ['BASIC', 'basic'],
  ['PRO', 'pro'],
  ['ULTRA', 'ultra'],
]);
/**
 * A credential header's value without the whitespace around it (RFC 9110 5.5): Node's parser strips it, some
 * Workers runtimes do not, and the same key must be the same key on both.
 */
export const credentialHeader = (headers: HeaderSource, name: string): string | null => headers.get(name)?.trim() ?? null;

/** Keys longer than this are no key of ours: refused before any hashing. */
const MAX_KEY_LENGTH = 256;

/** The header a key arrived in: `X-API-Key`, or the marketplace pair's key header. */
export type KeyForm = 'direct' | 'pair';

/** How the handler checks what identify finds: a key against the store, a proxy secret against the configured one. */
export interface Verifier {
  /** `form`: the header the key came in, `direct` (X-API-Key) or `pair` (the marketplace pair). */
  lookup(key: string, form: KeyForm): Maybe<Caller | null>;
  secret(value: string): Maybe<boolean>;
}

/**
 * The caller behind a request, or null (401). A direct `X-API-Key` alone suffices; a marketplace pair needs
 * both headers and the configured host, then a stored key or the proxy secret with a subscription header.
 * When both forms are sent and both are valid, the higher plan applies and is counted (decision 28); one valid
 * and one not, the valid one authorises. A key that has expired at `now` (decision 37) is not valid: it is returned
 * only when no valid credential was sent, so that the 401 can say when it expired. Synchronous when the verifier
 * answers at once (a key or a secret it has judged before).
 */
export function identify(headers: HeaderSource, marketplace: MarketplaceConfig, verify: Verifier, now: number): Maybe<Caller | null> {
  const direct = credentialHeader(headers, 'x-api-key');
  const byKey = direct && direct.length <= MAX_KEY_LENGTH ? verify.lookup(direct, 'direct') : undefined;
  return next(byKey, (k) => next(firstPair(headers, pairNames(marketplace), 0, marketplace, verify), (p) => preferred(k ?? null, p, now)));
}

/** The caller of the first of the marketplace's header name sets (from `i` on) that carries a valid pair. */
function firstPair(headers: HeaderSource, names: PairNames[], i: number, m: MarketplaceConfig, verify: Verifier): Maybe<Caller | null> {
  if (i === names.length) return null;
  return next(marketplacePair(headers, names[i]!, m, verify), (c) => c ?? firstPair(headers, names, i + 1, m, verify));
}

/** Of a direct key's caller and a pair's: the valid one, the higher plan of two valid, else either (for its 401). */
function preferred(byKey: Caller | null, byPair: Caller | null, now: number): Caller | null {
  const key = byKey && !expired(byKey, now) ? byKey : null;
  const pair = byPair && !expired(byPair, now) ? byPair : null;
  if (key && pair) return PLANS.indexOf(pair.plan) > PLANS.indexOf(key.plan) ? pair : key;
  return key ?? pair ?? byKey ?? byPair;
}

/** The credential header forms a request tries, by the names it used: `X-API-Key`, `x-rapidapi-key and x-rapidapi-host`. */
export function triedForms(headers: HeaderSource, marketplace: MarketplaceConfig): string[] {
  const forms = headers.has('x-api-key') ? ['X-API-Key'] : [];
  for (const n of pairNames(marketplace)) if (headers.has(n.key) || headers.has(n.host)) forms.push(`the ${n.key} and ${n.host} pair`);
  return forms;
}

/** The header names a marketplace key may arrive under: a request carrying one is not a direct key alone. */
export const pairKeyHeaders = (marketplace: MarketplaceConfig): string[] => pairNames(marketplace).map((n) => n.key);

function marketplacePair(headers: HeaderSource, names: PairNames, marketplace: MarketplaceConfig, verify: Verifier): Maybe<Caller | null> {
  const key = credentialHeader(headers, names.key);
  const host = credentialHeader(headers, names.host);
  if (!key || !host || !marketplace.host || key.length > MAX_KEY_LENGTH || host !== marketplace.host) return null;
  return next(verify.lookup(key, 'pair'), (stored) => {
    if (stored) return stored;
    const secret = credentialHeader(headers, names.secret);
    if (!marketplace.secret || !secret || secret.length > MAX_KEY_LENGTH) return null;
    return next(verify.secret(secret), (ok) => {
      const plan = ok ? SUBSCRIPTIONS.get(credentialHeader(headers, names.subscription) ?? '') : undefined;
      return plan ? names.subscribers[plan] : null;
    });
  });
}
