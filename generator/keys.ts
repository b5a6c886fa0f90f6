/** `risk-readings keys add` (decision 12): issue a direct key, store only its SHA-256 with the plan. */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import { keyStoreFromJson } from '../auth-shim/credentials.js';
import type { Plan } from './contract/plans.js';

export async function addKey(file: string, plan: Plan, label = ''): Promise<string> {
  let doc: { keys: { sha256: string; plan: string; label: string }[] } = { keys: [] };
  if (existsSync(file)) {
    doc = JSON.parse(readFileSync(file, 'utf8'));
    keyStoreFromJson(doc, file); // refuse to append to a store that is already malformed
  }
  const key = `rr_${randomBytes(24).toString('base64url')}`;
  doc.keys.push({ sha256: createHash('sha256').update(key).digest('hex'), plan, label });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify(doc, null, 2) + '\n', { mode: 0o600 });
  await rename(tmp, file);
  return key;
}
