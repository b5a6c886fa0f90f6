/**
 * `risk-readings usage` (decision 38): each key's requests in one calendar month (UTC), from the quota store `serve`
 * counts in, or from an edge deployment's quota directory through its worker (decision 98), with the key file's
 * labels and plans: what an operator invoices from. The store is `--quotas`, else RISK_READINGS_QUOTAS, as `serve`
 * takes it; a worker's operator token is RISK_READINGS_OPERATOR_TOKEN, never an option. Read-only: a running `serve`
 * is neither stopped nor slowed, and its lock on the quota file is never taken. Exit 0; 1 a store, a worker or a key
 * file that cannot be read; 2 usage (a path that is not there, `memory`, a URL that is not one, no store or no token,
 * a malformed month: refused before anything is read); 3 a damaged store.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { isWorkerUrl, monthTotals, shownUrl, TotalsUnreadable } from '../../auth-shim/node/quota-totals.js';
import { LegacyQuotaDamaged, QuotaStoreDamaged, QuotaStoreUnwritable } from '../../auth-shim/node/quota-stores.js';
import { monthName, monthOf, monthsAfter, MONTHS_KEPT, type MonthWindow } from '../../auth-shim/quota.js';
import { keyFileFromJson, keyLimits, type KeyFile, type KeyRecord } from '../contract/keys.js';
import type { Plan } from '../contract/plans.js';
import { USAGE_COLUMNS as COLUMNS } from './help.js';
import { quotaCounts, warnPasswordInQuotas } from './options.js';

export interface UsageFlags {
  quotas?: string;
  keys: string;
  month?: string;
  json?: boolean;
  csv?: boolean;
}

/**
 * One line of the bill: a key of the key file; a key revoked from it, with its label, plan and when it was revoked
 * (decision 87); or a credential counted of which the file keeps nothing (plan and label null).
 */
interface UsageRow {
  credential: string;
  label: string | null;
  plan: Plan | null;
  month: string;
  requests: number;
  revoked: string | null;
  /** The key's limits in effect (its own, decision 106, or its plan's); null for a credential the file keeps nothing of. */
  per_minute: number | null;
  per_month: number | null;
  /** The operator's data about the key (decision 106), or null. */
  meta: Record<string, unknown> | null;
}

/** The month named `YYYY-MM` (already checked by the option's parser), or the current one. */
function window(month: string | undefined, now: number): MonthWindow {
  if (!month) return monthOf(now);
  const [y, m] = month.split('-').map(Number) as [number, number];
  return { start: Date.UTC(y, m - 1, 1), end: Date.UTC(y, m, 1) };
}

/** A key file that cannot be read: exit 1, named. */
class KeysUnreadable extends Error {}

function readKeys(file: string): KeyFile {
  try {
    return keyFileFromJson(JSON.parse(readFileSync(file, 'utf8')), file);
  } catch (e) {
    throw new KeysUnreadable(e instanceof SyntaxError ? `${file}: cannot read the key store (${e.message})` : (e as Error).message, {
      cause: e,
    });
  }
}

/**
 * The rows of the bill: the key file's keys in its order; then each revoked key counted in the month, in the order
 * they were revoked; then what else was counted, by credential.
 */
function usageRows(file: KeyFile, totals: Map<string, number>, month: string): UsageRow[] {
  const rows: UsageRow[] = [];
  const billed = new Set<string>();
  const bill = (k: KeyRecord, revoked: string | null) => {
    const credential = `key:${k.sha256}`;
    if (billed.has(credential)) return;
    billed.add(credential);
    const requests = totals.get(credential) ?? 0;
    // A key in force is billed at 0 too (it was there to be used); a revoked one only when it was used.
    if (revoked === null || requests > 0)
      rows.push({
        credential: `key:${k.sha256.slice(0, 8)}`,
        label: k.label,
        plan: k.plan,
        month,
        requests,
        revoked,
        per_minute: keyLimits(k).perMinute,
        per_month: keyLimits(k).perMonth,
        meta: k.meta ?? null,
      });
  };
  for (const k of file.keys) bill(k, null);
  for (const k of file.revoked ?? []) bill(k, k.revoked);
  const others = [...totals].filter(([c]) => !billed.has(c)).sort(([a], [b]) => (a < b ? -1 : 1));
  for (const [c, requests] of others)
    rows.push({
      credential: c.startsWith('key:') ? c.slice(0, 12) : c,
      label: null,
      plan: null,
      month,
      requests,
      revoked: null,
      per_minute: null,
      per_month: null,
      meta: null,
    });
  return rows;
}

/** A CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break; `meta` as its JSON. */
const field = (v: string | number | Record<string, unknown> | null) => {
  const s = v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
};

function table(rows: UsageRow[]): string {
  const width = Math.max(10, ...rows.map((r) => r.credential.length));
  const count = Math.max(8, ...rows.map((r) => String(r.requests).length));
  const minute = Math.max(10, ...rows.map((r) => String(r.per_minute ?? '-').length));
  const monthly = Math.max(9, ...rows.map((r) => String(r.per_month ?? '-').length));
  const line = (c: string, plan: string, n: string, pm: string, pmo: string, label: string) =>
    `${c.padEnd(width)}  ${plan.padEnd(5)}  ${n.padStart(count)}  ${pm.padStart(minute)}  ${pmo.padStart(monthly)}  ${label}`;
  const total = rows.reduce((sum, r) => sum + r.requests, 0);
  return [
    line('credential', 'plan', 'requests', 'per_minute', 'per_month', 'label'),
    ...rows.map((r) =>
      line(
        r.credential,
        r.plan ?? '-',
        String(r.requests),
        String(r.per_minute ?? '-'),
        String(r.per_month ?? '-'),
        (r.label === null ? '(not in the key file)' : r.revoked ? `${r.label} (revoked ${r.revoked})` : r.label) +
          (r.meta ? `  ${JSON.stringify(r.meta)}` : ''),
      ),
    ),
    line('total', '', String(total), '', '', ''),
  ]
    .map((l) => l.trimEnd())
    .join('\n');
}

/** The store to read: `--quotas`, else RISK_READINGS_QUOTAS held to the same rule (exit 2 naming it), as serve does. */
function storeOf(o: UsageFlags): string {
  const fromEnv = process.env.RISK_READINGS_QUOTAS;
  const spec = o.quotas ?? (fromEnv ? quotaCounts('RISK_READINGS_QUOTAS')(fromEnv) : undefined);
  if (!spec)
    throw new Error(
      "usage: no quota store: give --quotas (the file or redis:// URL serve counts in, or an edge deployment's https:// URL) " +
        'or set RISK_READINGS_QUOTAS',
    );
  return spec;
}

export async function run(o: UsageFlags): Promise<void> {
  warnPasswordInQuotas(o.quotas);
  const spec = storeOf(o);
  const worker = isWorkerUrl(spec);
  const token = worker ? process.env.RISK_READINGS_OPERATOR_TOKEN?.trim() : undefined;
  if (worker && !token)
    throw new Error(
      `usage: ${o.quotas ? '--quotas' : 'RISK_READINGS_QUOTAS'} ${spec}: reading an edge deployment needs its operator token: ` +
        "set RISK_READINGS_OPERATOR_TOKEN to the worker's OPERATOR_TOKEN (docs/edge.md)",
    );
  // The paths are there (checked as the command line was parsed, exit 2 otherwise).
  const redis = /^rediss?:\/\//.test(spec);
  const quotas = redis || worker ? spec : resolve(spec);
  const keysFile = resolve(o.keys);
  const now = Date.now();
  const month = window(o.month, now);
  const name = monthName(month.start);
  let rows: UsageRow[];
  try {
    rows = usageRows(readKeys(keysFile), await monthTotals(quotas, month, undefined, token), name);
  } catch (e) {
    const damaged = e instanceof QuotaStoreDamaged || e instanceof QuotaStoreUnwritable || e instanceof LegacyQuotaDamaged;
    if (!(damaged || e instanceof TotalsUnreadable || e instanceof KeysUnreadable)) throw e;
    process.stderr.write(`risk-readings usage: ${(e as Error).message}\n`);
    // A damaged store is the environment's (decision 97): exit 3, as serve's; a store that cannot be reached is 1.
    process.exitCode = damaged ? 3 : 1;
    return;
  }
  if (o.json) process.stdout.write(JSON.stringify(rows, null, 2) + '\n');
  else if (o.csv)
    process.stdout.write([COLUMNS.join(','), ...rows.map((r) => COLUMNS.map((c) => field(r[c])).join(','))].join('\n') + '\n');
  else process.stdout.write(table(rows) + '\n');
  // The edge's totals are as each counter last reported them to the directory, a minute at most after it counted.
  const where = redis ? shownUrl(quotas) : worker ? `the edge's quota directory at ${quotas} (up to a minute behind its counters)` : quotas;
  const open =
    now < month.end
      ? '; the month has not ended, so these counts still grow'
      : month.start < monthsAfter(monthOf(now).start, -MONTHS_KEPT)
        ? `; the stores keep the current month and the ${MONTHS_KEPT} before it, so an older month may be gone`
        : '';
  process.stderr.write(`${name} (UTC), counted in ${where}${open}\n`);
}
