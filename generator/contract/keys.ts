/**
 * The direct-key store (decisions 12, 22, 37 and 106): `{"keys": [{sha256, plan, label, created?, expires?, limits?, meta?}]}`. The `keys` commands
 * write it and the shim reads it: the format is this one zod shape. Runtime-neutral, and the one shape the shim
 * parses at run time, so it is written with zod/mini: the edge bundle carries only what this shape uses. Beside
 * `keys`, `revoked` keeps what billing needs of each revoked key (decision 87); the shim's parser never reads it.
 */
// zod/mini: the same zod, tree-shaken, so the edge bundle carries only what this shape uses.
import * as z from 'zod/mini';
import { KEY_LIMIT_MAX, KEY_META_MAX_BYTES, PLAN_LIMITS, PLANS, type Plan } from './plans.js';
import { isoInstantMs } from './time.js';

const found = (v: unknown) => `found ${JSON.stringify(v)}`;

const isoTime = (i: { input: unknown }) => `expected an ISO 8601 time, ${found(i.input)}`;
const isoInstant = (i: { input: unknown }) => `expected an ISO 8601 instant with its zone, such as 2026-12-31T00:00:00Z, ${found(i.input)}`;

const limitOf = (max: number) => {
  const expected = (i: { input: unknown }) => `expected an integer from 1 to ${max}, ${found(i.input)}`;
  return z.optional(z.number({ error: expected }).check(z.refine((v) => Number.isInteger(v) && v >= 1 && v <= max, { error: expected })));
};
/** A key's `meta` serialised, in bytes (UTF-8). */
export const metaBytes = (meta: unknown): number => new TextEncoder().encode(JSON.stringify(meta)).byteLength;
const metaExpected = `expected a JSON object of at most ${KEY_META_MAX_BYTES} bytes`;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

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
  /** The key's own limits (decision 106): each one given replaces its plan's for this key alone. */
  limits: z.optional(
    z.object(
      { per_minute: limitOf(KEY_LIMIT_MAX.perMinute), per_month: limitOf(KEY_LIMIT_MAX.perMonth) },
      { error: 'expected an object {per_minute?, per_month?}' },
    ),
  ),
  /** The operator's own data about the key (decision 106); never sent to a caller, never logged. */
  meta: z.optional(z.custom<Record<string, unknown>>((v) => isObject(v) && metaBytes(v) <= KEY_META_MAX_BYTES, { error: metaExpected })),
});
/**
 * What the shim reads of the key file: `keys` alone. Any other member (`revoked`) is dropped unread, so nothing in it
 * can ever be taken for a credential, and a mistake in it never stops a server from reading its keys.
 */
const KeyStoreFile = z.object({ keys: z.array(KeyRecord) });

/**
 * A revoked key (decision 87): its record as it was, and when `keys revoke` removed it from `keys`. `usage` bills a
 * month's requests of a key revoked in it under its label and plan; no credential check reads it.
 */
export const RevokedKeyRecord = z.extend(KeyRecord, {
  revoked: z.string({ error: isoInstant }).check(z.refine((v) => Number.isFinite(isoInstantMs(v)), { error: isoInstant })),
});
/** The key file as the `keys` and `usage` commands read it: the keys in force, and the ones revoked. */
const KeyFileShape = z.object({ keys: z.array(KeyRecord), revoked: z.optional(z.array(RevokedKeyRecord)) });

export type KeyRecord = z.infer<typeof KeyRecord>;
export type RevokedKeyRecord = z.infer<typeof RevokedKeyRecord>;
export type KeyFile = z.infer<typeof KeyFileShape>;
/** The credential store of decision 12, loaded: SHA-256 hex of the key to its record. */
export type KeyStore = ReadonlyMap<string, KeyRecord>;

/** The first problem zod found in a key file, as `<source>: keys[2].plan: expected ...`. */
function keyFileProblem(issue: z.core.$ZodIssue, source: string): Error {
  const [list, index, field] = issue.path;
  if (index === undefined) return new Error(`${source}: ${list === 'revoked' ? `revoked: expected an array` : 'expected {"keys": [...]}'}`);
  const entry = `${String(list)}[${String(index)}]`;
  if (field === undefined) return new Error(`${source}: ${entry}: expected an object {sha256, plan, label}`);
  return new Error(`${source}: ${entry}.${String(field)}: ${issue.message}`);
}

/** Parses a key store file; throws naming the entry and field that is wrong (`keys[2].plan: expected ...`). */
export function keyStoreFromJson(json: unknown, source = 'keys'): KeyStore {
  const parsed = KeyStoreFile.safeParse(json);
  if (!parsed.success) throw keyFileProblem(parsed.error.issues[0]!, source);
  return new Map(parsed.data.keys.map((k) => [k.sha256, k]));
}

/** The whole key file, `revoked` included (the commands' read); throws as `keyStoreFromJson` does. */
export function keyFileFromJson(json: unknown, source = 'keys'): KeyFile {
  const parsed = KeyFileShape.safeParse(json);
  if (!parsed.success) throw keyFileProblem(parsed.error.issues[0]!, source);
  return parsed.data;
}

/** A key's per-minute and per-month limits in effect (decision 106): its own where it has them, else its plan's. */
export interface KeyLimits {
  perMinute: number;
  perMonth: number;
}
export const keyLimits = (rec: { plan: Plan; limits?: KeyRecord['limits'] }): KeyLimits => ({
  perMinute: rec.limits?.per_minute ?? PLAN_LIMITS[rec.plan].perMinute,
  perMonth: rec.limits?.per_month ?? PLAN_LIMITS[rec.plan].perMonth,
});

/** What names a key on the command line (`keys revoke --sha256`): the first 8 to 64 hex digits of its SHA-256. */
export const isHashPrefix = (v: string): boolean => /^[0-9a-f]{8,64}$/i.test(v);
export const hashPrefixExpected = (option: string, v: string) =>
  `${option} takes 8 to 64 hex digits of a key's hash, as keys list shows them, not ${JSON.stringify(v)}`;

/** When a record's key stops working, in milliseconds (decision 37): Infinity for a key that does not expire. */
export const keyExpiry = (rec: Pick<KeyRecord, 'expires'>): number => (rec.expires === undefined ? Infinity : isoInstantMs(rec.expires));

/** Decision 37: from its `expires` on, a key is refused. One comparison, so the shim's hot path parses nothing. */
export const hasExpired = (expiry: number, now: number): boolean => now >= expiry;
