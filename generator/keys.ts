/**
 * `risk-readings keys` (decisions 12 and 22): issue a direct key (its SHA-256 stored with the plan and the time),
 * list keys without ever showing one, revoke by label or hash prefix. Every change replaces the file whole, so a
 * running server that reloads it never reads half a file, and holds the file's lock from its read to its write, so
 * two commands at once never lose each other's change: every printed key is stored, a revoked key stays revoked.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import lockfile from 'proper-lockfile';
import { keyStoreFromJson, type KeyRecord, type KeyStoreFile } from './contract/keys.js';
import type { Plan } from './contract/plans.js';
import { sha256 } from './output/manifest.js';

/** The key file, checked; an absent file is an empty store. Errors name the file and the entry. */
function readKeys(file: string): KeyStoreFile {
  if (!existsSync(file)) return { keys: [] };
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new Error(`${file}: not JSON (${(e as Error).message})`, { cause: e });
  }
  keyStoreFromJson(doc, file);
  return doc as KeyStoreFile;
}

async function writeKeys(file: string, doc: KeyStoreFile): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify(doc, null, 2) + '\n', { mode: 0o600 });
  await rename(tmp, file);
}

/**
 * Reads the key file, changes it and writes it back under its lock (`<file>.lock`, a folder only one process can
 * make). Another command holding it is waited for, up to about ten seconds; a lock whose holder died is taken over
 * once it is ten seconds old.
 */
async function changeKeys<T>(file: string, change: (doc: KeyStoreFile) => { doc: KeyStoreFile; result: T }): Promise<T> {
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

export async function addKey(file: string, plan: Plan, label = '', now = new Date()): Promise<string> {
  const key = `rr_${randomBytes(24).toString('base64url')}`;
  const record = {
    sha256: sha256(key),
    plan,
    label,
    created: now.toISOString().replace(/\.\d{3}Z$/, 'Z'),
  };
  return changeKeys(file, (doc) => ({ doc: { ...doc, keys: [...doc.keys, record] }, result: key }));
}

export interface KeyListing {
  label: string;
  plan: Plan;
  sha256_prefix: string;
  created: string | null;
}

export function listKeys(file: string): KeyListing[] {
  return readKeys(file).keys.map((k) => ({
    label: k.label,
    plan: k.plan,
    sha256_prefix: k.sha256.slice(0, 8),
    created: k.created ?? null,
  }));
}

/**
 * Removes the keys with exactly this label, or the one key whose hash starts with `sha256` (8 hex digits or
 * more; a prefix that matches several keys is refused). Returns what it removed; throws when nothing matches.
 */
export async function revokeKeys(file: string, by: { label?: string; sha256?: string }): Promise<KeyListing[]> {
  if (by.sha256 !== undefined && !/^[0-9a-f]{8,64}$/.test(by.sha256.toLowerCase()))
    throw new Error(`--sha256: expected 8 to 64 hex digits of a key's hash, found ${JSON.stringify(by.sha256)}`);
  if (by.sha256 === undefined && by.label === undefined) throw new Error('keys revoke: give --label or --sha256');
  return changeKeys(file, (doc) => {
    let match: (k: KeyRecord) => boolean;
    if (by.sha256 !== undefined) {
      const prefix = by.sha256.toLowerCase();
      const hits = doc.keys.filter((k) => k.sha256.startsWith(prefix));
      if (hits.length > 1) throw new Error(`${file}: ${hits.length} keys have a hash starting ${prefix}; give more digits`);
      match = (k) => k.sha256.startsWith(prefix);
    } else match = (k) => k.label === by.label;
    const gone = doc.keys.filter(match);
    if (!gone.length)
      throw new Error(
        `${file}: no key ${by.sha256 !== undefined ? `has a hash starting ${by.sha256}` : `is labelled ${JSON.stringify(by.label)}`}`,
      );
    const result = gone.map((k) => ({ label: k.label, plan: k.plan, sha256_prefix: k.sha256.slice(0, 8), created: k.created ?? null }));
    return { doc: { ...doc, keys: doc.keys.filter((k) => !match(k)) }, result };
  });
}
