/**
 * `risk-readings keys` (decisions 12, 22 and 37): issue a direct key (its SHA-256 stored with the plan, the time and
 * an expiry if it has one), roll a label's keys over to a new one, list keys with their state without ever showing
 * one, revoke by label or hash prefix (kept beside the keys for billing, decision 87). Every change replaces the file whole, so a running server that reloads it
 * never reads half a file, and holds the file's lock from its read to its write, so two commands at once never lose
 * each other's change: every printed key is stored, a revoked key stays revoked.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import lockfile from 'proper-lockfile';
import {
  hashPrefixExpected,
  hasExpired,
  isHashPrefix,
  keyExpiry,
  keyFileFromJson,
  keyLimits,
  type KeyFile,
  type KeyRecord,
  type RevokedKeyRecord,
} from './contract/keys.js';
import type { Plan } from './contract/plans.js';
import { sha256 } from './output/manifest.js';

/**
 * The key file, checked; an absent file is an empty store. Errors name the file and the entry. The document is
 * returned as written (a member the format does not know, written by hand, is kept when the file is rewritten).
 */
function readKeys(file: string): KeyFile {
  if (!existsSync(file)) return { keys: [] };
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new Error(`${file}: not JSON (${(e as Error).message})`, { cause: e });
  }
  keyFileFromJson(doc, file);
  return doc as KeyFile;
}

async function writeKeys(file: string, doc: KeyFile): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  // A file that never had a key revoked keeps the shape of decision 12.
  const { revoked, ...rest } = doc;
  await writeFile(tmp, JSON.stringify(revoked?.length ? doc : rest, null, 2) + '\n', { mode: 0o600 });
  await rename(tmp, file);
}

/**
 * Reads the key file, changes it and writes it back under its lock (`<file>.lock`, a folder only one process can
 * make). Another command holding it is waited for, up to about ten seconds; a lock whose holder died is taken over
 * once it is ten seconds old.
 */
async function changeKeys<T>(file: string, change: (doc: KeyFile) => { doc: KeyFile; result: T }): Promise<T> {
  let release: () => Promise<void>;
  try {
    release = await lockfile.lock(file, { realpath: false, stale: 10_000, retries: { retries: 100, minTimeout: 10, maxTimeout: 100 } });
  } catch (e) {
    const held = (e as NodeJS.ErrnoException).code === 'ELOCKED';
    throw new Error(
      held ? `${file}: another keys command holds ${file}.lock; try again` : `${file}: cannot lock it (${(e as Error).message})`,
      {
        cause: e,
      },
    );
  }
  try {
    const { doc, result } = change(readKeys(file));
    await writeKeys(file, doc);
    return result;
  } finally {
    await release();
  }
}

/** An instant as the key file writes it: ISO 8601 UTC, to the second. */
const stamp = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/**
 * A change to a key's own terms (decision 106): a number sets that limit, null returns it to the plan's; an object
 * sets `meta` (an empty one, or null, removes it); undefined leaves each as it was.
 */
export interface KeyTerms {
  perMinute?: number | null;
  perMonth?: number | null;
  meta?: Record<string, unknown> | null;
}

/** The record with `terms` applied; a record left with no limit of its own, or an empty `meta`, carries neither. */
function withTerms<R extends KeyRecord>(rec: R, terms: KeyTerms): R {
  const { limits: had, meta: hadMeta, ...rest } = rec;
  const limits = { ...had };
  const set = (k: 'per_minute' | 'per_month', v: number | null | undefined) => {
    if (v === null) delete limits[k];
    else if (v !== undefined) limits[k] = v;
  };
  set('per_minute', terms.perMinute);
  set('per_month', terms.perMonth);
  const meta = terms.meta === undefined ? hadMeta : (terms.meta ?? undefined);
  const out = rest as R;
  if (Object.keys(limits).length) out.limits = limits;
  if (meta && Object.keys(meta).length) out.meta = meta;
  return out;
}

/** A new key and its record; the key is returned once and never stored. */
function newKey(plan: Plan, label: string, now: Date, expires?: number): { key: string; record: KeyRecord } {
  const key = `rr_${randomBytes(24).toString('base64url')}`;
  const record: KeyRecord = { sha256: sha256(key), plan, label, created: stamp(now.getTime()) };
  if (expires !== undefined) record.expires = stamp(expires);
  return { key, record };
}

/** Issues a key; `expires` (milliseconds) ends it, decision 37; `terms` are its own limits and meta, decision 106. */
export async function addKey(
  file: string,
  plan: Plan,
  label = '',
  now = new Date(),
  expires?: number,
  terms: KeyTerms = {},
): Promise<string> {
  const { key, record } = newKey(plan, label, now, expires);
  return changeKeys(file, (doc) => ({ doc: { ...doc, keys: [...doc.keys, withTerms(record, terms)] }, result: key }));
}

export interface Rolled {
  key: string;
  added: KeyListing;
  /** The label's keys that were valid, each now ending when the overlap does (or sooner, if it already did). */
  ending: KeyListing[];
}

/**
 * `keys roll --label L` (decision 37): a new key with the plan and label of L's keys, while the keys of L that are
 * still valid keep working until `now + overlapMs` (one that ends sooner keeps its own end), so the customer always
 * holds a working key. The new key ends when the keys it replaces would have, if they all had an end, unless
 * `expires` says otherwise. When no key of L is valid any more (a lapsed trial), `expires` must say when the new key
 * ends (decision 88): every lapsed key had an end, and a roll that made the trial a key without one would be a
 * permanent key nobody asked for (`keys add` issues that). L's keys must hold one plan: which one to issue would
 * otherwise be a guess.
 */
export async function rollKeys(file: string, label: string, overlapMs: number, now = new Date(), expires?: number): Promise<Rolled> {
  return changeKeys(file, (doc) => {
    const mine = doc.keys.filter((k) => k.label === label);
    if (!mine.length) throw new Error(`${file}: no key is labelled ${JSON.stringify(label)}`);
    const valid = mine.filter((k) => !hasExpired(keyExpiry(k), now.getTime()));
    if (!valid.length && expires === undefined) {
      const latest = mine.reduce((a, b) => (keyExpiry(b) > keyExpiry(a) ? b : a));
      throw new Error(
        `${file}: every key labelled ${JSON.stringify(label)} has ended (the last at ${stamp(keyExpiry(latest))}), and a roll does not make a key that ` +
          `ended into one that never does: give --expires for the new key's end (+14d for another trial), or issue a key ` +
          `without an end with keys add --plan ${latest.plan} --label ${JSON.stringify(label)}`,
      );
    }
    const plans = [...new Set((valid.length ? valid : mine).map((k) => k.plan))];
    if (plans.length > 1)
      throw new Error(
        `${file}: the keys labelled ${JSON.stringify(label)} hold plans ${plans.join(' and ')}; revoke the ones to drop (--sha256), then roll`,
      );
    const ends = valid.map(keyExpiry);
    const inherited = valid.length && ends.every(Number.isFinite) ? Math.max(...ends) : undefined;
    const { key, record: fresh } = newKey(plans[0]!, label, now, expires ?? inherited);
    // The new key keeps the customer's own terms (decision 106): those of the last of the keys it replaces.
    const last = (valid.length ? valid : mine).at(-1)!;
    const record = withTerms(fresh, { perMinute: last.limits?.per_minute, perMonth: last.limits?.per_month, meta: last.meta });
    const until = now.getTime() + overlapMs;
    const replaced = new Set(valid);
    const keys = doc.keys.map((k) => (replaced.has(k) && keyExpiry(k) > until ? { ...k, expires: stamp(until) } : k));
    const ending = keys.filter((_, i) => replaced.has(doc.keys[i]!)).map((k) => listing(k, now));
    return { doc: { ...doc, keys: [...keys, record] }, result: { key, added: listing(record, now), ending } };
  });
}

/** A key as `keys list` shows it: never the key, its hash's first 8 hex digits; `revoked` when it was (decision 87). */
export interface KeyListing {
  label: string;
  plan: Plan;
  sha256_prefix: string;
  created: string | null;
  expires: string | null;
  state: KeyState;
  revoked: string | null;
  /** The limits in effect (decision 106): the key's own where it has them, else its plan's. */
  per_minute: number;
  per_month: number;
  /** Which of them are the key's own rather than its plan's. */
  own_limits: { per_minute: boolean; per_month: boolean };
  /** The operator's data about the key, or null. */
  meta: Record<string, unknown> | null;
}

/**
 * Where a key stands (decision 37): `expired` from its `expires` on; `expiring` when that is at most
 * EXPIRING_WITHIN_MS away (a rolled key's overlap, a trial's last week), so an operator sees in time which customers
 * need a new key; `active` otherwise, a key without `expires` included.
 */
type KeyState = 'active' | 'expiring' | 'expired' | 'revoked';
export const EXPIRING_WITHIN_MS = 7 * 86_400_000;

function keyState(rec: Pick<KeyRecord, 'expires'>, now: number): KeyState {
  const expiry = keyExpiry(rec);
  if (hasExpired(expiry, now)) return 'expired';
  return expiry - now <= EXPIRING_WITHIN_MS ? 'expiring' : 'active';
}

const listing = (k: KeyRecord | RevokedKeyRecord, now: Date): KeyListing => ({
  label: k.label,
  plan: k.plan,
  sha256_prefix: k.sha256.slice(0, 8),
  created: k.created ?? null,
  expires: k.expires ?? null,
  state: 'revoked' in k ? 'revoked' : keyState(k, now.getTime()),
  revoked: 'revoked' in k ? k.revoked : null,
  ...(({ perMinute, perMonth }) => ({ per_minute: perMinute, per_month: perMonth }))(keyLimits(k)),
  own_limits: { per_minute: k.limits?.per_minute !== undefined, per_month: k.limits?.per_month !== undefined },
  meta: k.meta ?? null,
});

/** The keys in force, in the file's order; with `revoked`, then the revoked ones, in the order they were revoked. */
export function listKeys(file: string, now = new Date(), { revoked = false } = {}): KeyListing[] {
  const doc = readKeys(file);
  return [...doc.keys, ...(revoked ? (doc.revoked ?? []) : [])].map((k) => listing(k, now));
}

/**
 * Removes the keys with exactly this label, or the one key whose hash starts with `sha256` (8 hex digits or
 * more; a prefix that matches several keys is refused), from `keys`, and keeps each, with the time, in `revoked`
 * (decision 87): what `usage` bills a month's requests of a revoked key under. Returns what it removed; throws when
 * nothing matches.
 */
/** The keys `--label` or `--sha256` names (a prefix matching several keys is refused); throws when none is. */
function named(file: string, keys: KeyRecord[], by: { label?: string; sha256?: string }): (k: KeyRecord) => boolean {
  let match: (k: KeyRecord) => boolean;
  if (by.sha256 !== undefined) {
    const prefix = by.sha256.toLowerCase();
    const hits = keys.filter((k) => k.sha256.startsWith(prefix));
    if (hits.length > 1) throw new Error(`${file}: ${hits.length} keys have a hash starting ${prefix}; give more digits`);
    match = (k) => k.sha256.startsWith(prefix);
  } else match = (k) => k.label === by.label;
  if (!keys.some(match))
    throw new Error(
      `${file}: no key ${by.sha256 !== undefined ? `has a hash starting ${by.sha256}` : `is labelled ${JSON.stringify(by.label)}`}`,
    );
  return match;
}

/**
 * `keys set` (decision 106): changes the own terms of every key with the label, or of the one key whose hash starts
 * with the prefix, in place. The keys, their hashes and so their counts stay as they are. Returns them as changed.
 */
export async function setKeys(
  file: string,
  by: { label?: string; sha256?: string },
  terms: KeyTerms,
  now = new Date(),
): Promise<KeyListing[]> {
  if (by.sha256 !== undefined && !isHashPrefix(by.sha256)) throw new Error(hashPrefixExpected('--sha256', by.sha256));
  if (by.sha256 === undefined && by.label === undefined) throw new Error('keys set: give --label or --sha256');
  return changeKeys(file, (doc) => {
    const match = named(file, doc.keys, by);
    const keys = doc.keys.map((k) => (match(k) ? withTerms(k, terms) : k));
    return { doc: { ...doc, keys }, result: keys.filter(match).map((k) => listing(k, now)) };
  });
}

export async function revokeKeys(file: string, by: { label?: string; sha256?: string }, now = new Date()): Promise<KeyListing[]> {
  // The command line refuses a malformed prefix as usage (exit 2); a caller of this function gets the same words.
  if (by.sha256 !== undefined && !isHashPrefix(by.sha256)) throw new Error(hashPrefixExpected('--sha256', by.sha256));
  if (by.sha256 === undefined && by.label === undefined) throw new Error('keys revoke: give --label or --sha256');
  return changeKeys(file, (doc) => {
    const match = named(file, doc.keys, by);
    const gone = doc.keys.filter(match);
    const revoked = gone.map((k): RevokedKeyRecord => ({ ...k, revoked: stamp(now.getTime()) }));
    const result = revoked.map((k) => listing(k, now));
    return { doc: { ...doc, keys: doc.keys.filter((k) => !match(k)), revoked: [...(doc.revoked ?? []), ...revoked] }, result };
  });
}
