/**
 * The direct-key store (decisions 12 and 22): `{"keys": [{sha256, plan, label, created?}]}`. The `keys` commands
 * write it and the shim reads it: the format is defined here, once. Runtime-neutral.
 */
import { PLANS, type Plan } from './plans.js';

export interface KeyRecord {
  sha256: string;
  plan: Plan;
  label: string;
  created?: string;
}
/** The credential store of decision 12, loaded: SHA-256 hex of the key to its record. */
export type KeyStore = ReadonlyMap<string, KeyRecord>;

/** Parses `{"keys": [{sha256, plan, label, created?}]}` (decisions 12, 22); throws with the entry and field that is wrong. */
export function keyStoreFromJson(json: unknown, source = 'keys'): KeyStore {
  const keys = (json as { keys?: unknown })?.keys;
  if (!Array.isArray(keys)) throw new Error(`${source}: expected {"keys": [...]}`);
  const store = new Map<string, KeyRecord>();
  keys.forEach((k: { sha256?: unknown; plan?: unknown; label?: unknown; created?: unknown }, i) => {
    if (typeof k?.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(k.sha256))
      throw new Error(`${source}: keys[${i}].sha256: expected 64 lower-case hex digits`);
    if (typeof k.plan !== 'string' || !(PLANS as readonly string[]).includes(k.plan))
      throw new Error(`${source}: keys[${i}].plan: expected basic, pro or ultra, found ${JSON.stringify(k.plan)}`);
    if (k.created !== undefined && (typeof k.created !== 'string' || !Number.isFinite(Date.parse(k.created))))
      throw new Error(`${source}: keys[${i}].created: expected an ISO 8601 time, found ${JSON.stringify(k.created)}`);
    store.set(k.sha256, {
      sha256: k.sha256,
      plan: k.plan as Plan,
      label: typeof k.label === 'string' ? k.label : '',
      ...(k.created ? { created: k.created as string } : {}),
    });
  });
  return store;
}
