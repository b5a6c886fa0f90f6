/** `risk-readings keys add|list|revoke`: the direct-key store; a store it cannot read is named, exit 1. */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { addKey, listKeys, revokeKeys } from '../keys.js';

/** A key-store command: its error (naming the file and entry) on stderr and exit 1, never a stack. */
async function keysCommand<T>(fn: () => Promise<T>): Promise<T | undefined> {
  try {
    return await fn();
  } catch (e) {
    process.stderr.write(`risk-readings keys: ${(e as Error).message}\n`);
    process.exitCode = 1;
    return undefined;
  }
}

export async function add(o: { keys: string; plan: string; label: string }): Promise<void> {
  const key = await keysCommand(() => addKey(resolve(o.keys), o.plan as Parameters<typeof addKey>[1], o.label));
  if (key) process.stdout.write(key + '\n');
}

/** A key store that `list` or `revoke` is pointed at must exist (only `add` creates one): a typo is usage, exit 2. */
function mustExist(file: string): boolean {
  if (existsSync(file)) return true;
  process.stderr.write(`risk-readings keys: ${file}: no such key file (keys add creates one)\n`);
  process.exitCode = 2;
  return false;
}

export async function list(o: { keys: string; json?: boolean }): Promise<void> {
  if (!mustExist(resolve(o.keys))) return;
  const rows = await keysCommand(async () => listKeys(resolve(o.keys)));
  if (!rows) return;
  const line = (r: (typeof rows)[number]) => `${r.sha256_prefix}  ${r.plan.padEnd(5)}  ${r.created ?? '-'.padEnd(20)}  ${r.label}`;
  process.stdout.write(o.json ? JSON.stringify(rows, null, 2) + '\n' : rows.map(line).join('\n') + (rows.length ? '\n' : ''));
}

export async function revoke(o: { keys: string; label?: string; sha256?: string }): Promise<void> {
  if ((o.label === undefined) === (o.sha256 === undefined)) {
    process.stderr.write('risk-readings keys revoke: give one of --label or --sha256\n');
    process.exitCode = 2;
    return;
  }
  if (!mustExist(resolve(o.keys))) return;
  const gone = await keysCommand(() => revokeKeys(resolve(o.keys), { label: o.label, sha256: o.sha256 }));
  for (const g of gone ?? []) process.stdout.write(`revoked ${g.sha256_prefix} ${g.plan} ${g.label}\n`);
}
