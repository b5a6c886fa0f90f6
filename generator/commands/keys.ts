/** `risk-readings keys add|set|roll|list|revoke`: the direct-key store; a store it cannot read is named, exit 1. */
import { resolve } from 'node:path';
import { addKey, listKeys, revokeKeys, rollKeys, setKeys, type KeyListing, type KeyTerms } from '../keys.js';
import type { Plan } from '../contract/plans.js';
import type { Expiry } from './options.js';

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

/** The instant an `--expires` names, from when the command runs. */
const expiresAt = (e: Expiry | undefined, now: Date) => (e === undefined ? undefined : 'at' in e ? e.at : now.getTime() + e.after);

/** The terms options as given (decision 106); an option not given changes nothing. */
type TermsFlags = { perMinute?: number | 'plan'; perMonth?: number | 'plan'; meta?: Record<string, unknown> };
const limitOf = (v: number | 'plan' | undefined) => (v === 'plan' ? null : v);
const termsOf = (o: TermsFlags): KeyTerms => ({ perMinute: limitOf(o.perMinute), perMonth: limitOf(o.perMonth), meta: o.meta });

export async function add(o: { keys: string; plan: Plan; label: string; expires?: Expiry } & TermsFlags): Promise<void> {
  const now = new Date();
  const key = await keysCommand(() => addKey(resolve(o.keys), o.plan, o.label, now, expiresAt(o.expires, now), termsOf(o)));
  if (key) process.stdout.write(key + '\n');
}

/** What a key's limits now are, as `keys set` reports them: a `*` marks the key's own. */
const limitsSaid = (k: KeyListing) =>
  `${k.per_minute}${k.own_limits.per_minute ? '*' : ''}/min ${k.per_month}${k.own_limits.per_month ? '*' : ''}/month`;

export async function set(o: { keys: string; label?: string; sha256?: string } & TermsFlags): Promise<void> {
  if ((o.label === undefined) === (o.sha256 === undefined)) {
    process.stderr.write('risk-readings keys set: give one of --label or --sha256\n');
    process.exitCode = 2;
    return;
  }
  if (o.perMinute === undefined && o.perMonth === undefined && o.meta === undefined) {
    process.stderr.write('risk-readings keys set: give --per-minute, --per-month or --meta\n');
    process.exitCode = 2;
    return;
  }
  const changed = await keysCommand(() => setKeys(resolve(o.keys), { label: o.label, sha256: o.sha256 }, termsOf(o)));
  for (const k of changed ?? []) process.stdout.write(`set ${k.sha256_prefix} ${k.plan} ${limitsSaid(k)} ${k.label}\n`);
}

/** The new key alone on stdout (as `add`), what happened to the old ones on stderr. */
export async function roll(o: { keys: string; label: string; overlap: number; expires?: Expiry }): Promise<void> {
  const now = new Date();
  const rolled = await keysCommand(() => rollKeys(resolve(o.keys), o.label, o.overlap, now, expiresAt(o.expires, now)));
  if (!rolled) return;
  process.stdout.write(rolled.key + '\n');
  const { added } = rolled;
  const says = (k: KeyListing) => `${k.sha256_prefix} (${k.plan}, ${JSON.stringify(k.label)})`;
  process.stderr.write(`new key ${says(added)}${added.expires ? `, works until ${added.expires}` : ''}\n`);
  for (const k of rolled.ending) process.stderr.write(`old key ${says(k)} works until ${k.expires}\n`);
  if (!rolled.ending.length)
    process.stderr.write(`no key labelled ${JSON.stringify(o.label)} was still valid: the new key renews it until ${added.expires}\n`);
}

/** One row a key, under a header line; never a key. With `revoked`, when each revoked key was (decision 87). */
function table(rows: KeyListing[], revoked: boolean): string {
  const COLUMNS = [
    'sha256',
    'plan',
    'state',
    'created',
    'expires',
    ...(revoked ? ['revoked'] : []),
    'per_minute',
    'per_month',
    'label',
    'meta',
  ];
  const cells = rows.map((r) => [
    r.sha256_prefix,
    r.plan,
    r.state,
    r.created ?? '-',
    r.expires ?? '-',
    ...(revoked ? [r.revoked ?? '-'] : []),
    // A `*` marks a limit that is the key's own (decision 106), not its plan's.
    `${r.per_minute}${r.own_limits.per_minute ? '*' : ''}`,
    `${r.per_month}${r.own_limits.per_month ? '*' : ''}`,
    r.label || '-',
    r.meta ? JSON.stringify(r.meta) : '',
  ]);
  const widths = COLUMNS.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const line = (row: readonly string[]) =>
    row
      .map((cell, i) => (i < row.length - 1 ? cell.padEnd(widths[i]!) : cell))
      .join('  ')
      .trimEnd();
  return [COLUMNS, ...cells].map(line).join('\n') + '\n';
}

export async function list(o: { keys: string; json?: boolean; revoked?: boolean }): Promise<void> {
  const rows = await keysCommand(async () => listKeys(resolve(o.keys), new Date(), { revoked: o.revoked }));
  if (!rows) return;
  if (o.json) process.stdout.write(JSON.stringify(rows, null, 2) + '\n');
  else if (rows.length) process.stdout.write(table(rows, o.revoked === true));
  else process.stderr.write(`no keys in ${resolve(o.keys)}\n`);
}

export async function revoke(o: { keys: string; label?: string; sha256?: string }): Promise<void> {
  if ((o.label === undefined) === (o.sha256 === undefined)) {
    process.stderr.write('risk-readings keys revoke: give one of --label or --sha256\n');
    process.exitCode = 2;
    return;
  }
  const gone = await keysCommand(() => revokeKeys(resolve(o.keys), { label: o.label, sha256: o.sha256 }));
  for (const g of gone ?? []) process.stdout.write(`revoked ${g.sha256_prefix} ${g.plan} ${g.label}\n`);
}
