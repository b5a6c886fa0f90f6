/** Credentials (spec Authentication, decisions 12 and 13): direct keys and the marketplace pair. Web Crypto only. */
import type { Plan } from '../generator/contract/plans.js';

export interface KeyRecord { sha256: string; plan: Plan; label: string }
/** The credential store of decision 12, loaded: SHA-256 hex of the key to its record. */
export type KeyStore = ReadonlyMap<string, KeyRecord>;

const PLANS: readonly string[] = ['basic', 'pro', 'ultra'];

/** Parses `{"keys": [{sha256, plan, label}]}`; throws with the entry and field that is wrong. */
export function keyStoreFromJson(json: unknown, source = 'keys'): KeyStore {
  const keys = (json as { keys?: unknown })?.keys;
  if (!Array.isArray(keys)) throw new Error(`${source}: expected {"keys": [...]}`);
  const store = new Map<string, KeyRecord>();
  keys.forEach((k: { sha256?: unknown; plan?: unknown; label?: unknown }, i) => {
    if (typeof k?.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(k.sha256)) throw new Error(`${source}: keys[${i}].sha256: expected 64 lower-case hex digits`);
    if (typeof k.plan !== 'string' || !PLANS.includes(k.plan)) throw new Error(`${source}: keys[${i}].plan: expected basic, pro or ultra, found ${JSON.stringify(k.plan)}`);
    store.set(k.sha256, { sha256: k.sha256, plan: k.plan as Plan, label: typeof k.label === 'string' ? k.label : '' });
  });
  return store;
}

const encoder = new TextEncoder();
export async function sha256Hex(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', encoder.encode(text)));
  let hex = '';
  for (const b of digest) hex += b.toString(16).padStart(2, '0');
  return hex;
}

/** Compares two secrets in time independent of where they differ: both are hashed to 32 bytes first. */
export async function constantTimeEqual(a: string, b: string): Promise<boolean> {
  const [x, y] = await Promise.all([crypto.subtle.digest('SHA-256', encoder.encode(a)), crypto.subtle.digest('SHA-256', encoder.encode(b))]);
  const u = new Uint8Array(x);
  const v = new Uint8Array(y);
  let diff = 0;
  for (let i = 0; i < u.length; i++) diff |= u[i]! ^ v[i]!;
  return diff === 0;
}

export interface Caller {
  plan: Plan;
  /** Who quotas are counted against; null when the marketplace counts them (decision 13 b). */
  quotaKey: string | null;
}

export interface MarketplaceConfig { host?: string; secret?: string }

const SUBSCRIPTIONS: Record<string, Plan> = { BASIC: 'basic', PRO: 'pro', ULTRA: 'ultra' };
/** Keys longer than this are no key of ours: refused before any hashing. */
const MAX_KEY_LENGTH = 256;

/**
 * The caller behind a request, or null (401). A direct `X-API-Key` alone suffices; a marketplace pair needs
 * both headers and the configured host, then a stored key or the proxy secret with a subscription header.
 * When both forms are sent, either valid one authorises.
 */
export async function identify(headers: Headers, keys: KeyStore | null, marketplace: MarketplaceConfig, lookup: (key: string) => Promise<Caller | undefined>): Promise<Caller | null> {
  const direct = headers.get('x-api-key');
  if (direct && keys && direct.length <= MAX_KEY_LENGTH) {
    const caller = await lookup(direct);
    if (caller) return caller;
  }
  const key = headers.get('x-marketplace-key');
  const host = headers.get('x-marketplace-host');
  if (!key || !host || !marketplace.host || key.length > MAX_KEY_LENGTH || host !== marketplace.host) return null;
  if (keys) {
    const caller = await lookup(key);
    if (caller) return caller;
  }
  const secret = headers.get('x-marketplace-proxy-secret');
  if (marketplace.secret && secret && secret.length <= MAX_KEY_LENGTH && (await constantTimeEqual(secret, marketplace.secret))) {
    const plan = SUBSCRIPTIONS[headers.get('x-marketplace-subscription') ?? ''];
    if (plan) return { plan, quotaKey: null };
  }
  return null;
}
