/**
 * The direct-key store (decisions 12, 22 and 37): `{"keys": [{sha256, plan, label, created?, expires?}]}`. The `keys` commands
 * write it and the shim reads it: the format is this one zod shape. Runtime-neutral, and the one shape the shim
 * parses at run time, so it is written with zod/mini: the edge bundle carries only what this shape uses.
 */
// zod/mini: the same zod, tree-shaken, so the edge bundle carries only what this shape uses.
import * as z from 'zod/mini';
import { PLANS } from './plans.js';
import { isoInstantMs } from './time.js';

const found = (v: unknown) => `found ${JSON.stringify(v)}`;

const isoTime = (i: { input: unknown }) => `expected an ISO 8601 time, ${found(i.input)}`;
const isoInstant = (i: { input: unknown }) => `expected an ISO 8601 instant with its zone, such as 2026-12-31T00:00:00Z, ${found(i.input)}`;

export const KeyRecord = z.object({
  sha256: z.string({ error: 'expected 64 lower-case hex digits' }).check(z.regex(/^[0-9a-f]{64}$/, 'expected 64 lower-case hex digits')),
  plan: z.enum(PLANS, { error: (i) => `expected basic, pro or ultra, ${found(i.input)}` }),
  /** Free text for the operator; a store written by hand may omit it. */
  label: z.catch(z.string(), ''),
  created: z.optional(z.string({ error: isoTime }).check(z.refine((v) => Number.isFinite(Date.parse(v)), { error: isoTime }))),
  /**
   * From this instant on the key is refused (decision 37); absent, the key does not expire. Its zone is required: the
   * Node server and the edge must read one instant from it, whatever the machine's time zone.
   */
  expires: z.optional(z.string({ error: isoInstant }).check(z.refine((v) => Number.isFinite(isoInstantMs(v)), { error: isoInstant }))),
});
export const KeyStoreFile = z.object({ keys: z.array(KeyRecord) });

export type KeyRecord = z.infer<typeof KeyRecord>;
export type KeyStoreFile = z.infer<typeof KeyStoreFile>;
/** The credential store of decision 12, loaded: SHA-256 hex of the key to its record. */
export type KeyStore = ReadonlyMap<string, KeyRecord>;

/** Parses a key store file; throws naming the entry and field that is wrong (`keys[2].plan: expected ...`). */
export function keyStoreFromJson(json: unknown, source = 'keys'): KeyStore {
  const parsed = KeyStoreFile.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const [, index, field] = issue.path;
    if (index === undefined) throw new Error(`${source}: expected {"keys": [...]}`);
    if (field === undefined) throw new Error(`${source}: keys[${String(index)}]: expected an object {sha256, plan, label}`);
    throw new Error(`${source}: keys[${String(index)}].${String(field)}: ${issue.message}`);
  }
  return new Map(parsed.data.keys.map((k) => [k.sha256, k]));
}

/** When a record's key stops working, in milliseconds (decision 37): Infinity for a key that does not expire. */
export const keyExpiry = (rec: Pick<KeyRecord, 'expires'>): number => (rec.expires === undefined ? Infinity : isoInstantMs(rec.expires));

/** Decision 37: from its `expires` on, a key is refused. One comparison, so the shim's hot path parses nothing. */
export const hasExpired = (expiry: number, now: number): boolean => now >= expiry;
