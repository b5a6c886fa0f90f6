/**
 * Monthly totals as billing reads them (decision 38, `risk-readings usage`): every credential's requests in one
 * month, from the quota database (or a quota file of an earlier release not imported yet), from Redis, or from an
 * edge deployment's quota directory through the worker's operator route (decision 98). Read-only: a running `serve`
 * keeps writing the database (SQLite's WAL lets a reader in beside it), and its lock is never taken; Redis and the
 * worker are only read.
 */
import type { DatabaseSync } from 'node:sqlite';
import { Redis } from 'ioredis';
import { OPERATOR_USAGE } from '../edge-operator.js';
import { monthName, totalsOf, type MonthWindow } from '../quota.js';
import { isLegacyQuotaFile, readLegacyQuotaFile } from './quota-import.js';
import { checkedDatabase, isBusy, readCounts } from './quota-database.js';
import { isWorkerUrl, OperatorUnreachable, operatorRequest } from './operator-client.js';
import { DEFAULT_REDIS_PREFIX, redisKeys } from './quota-redis.js';

/** A store that cannot be read (a damaged file, Redis away): the usage command's exit 1. */
export class TotalsUnreadable extends Error {}

export { isWorkerUrl } from './operator-client.js';

/**
 * Each credential's requests in `month` (credentials with none are left out); `prefix` as the Redis store's; a
 * worker's URL is read with `operatorToken`, its OPERATOR_TOKEN.
 */
export async function monthTotals(
  spec: string,
  month: MonthWindow,
  prefix = DEFAULT_REDIS_PREFIX,
  operatorToken = '',
): Promise<Map<string, number>> {
  if (isWorkerUrl(spec)) return workerTotals(spec, month, operatorToken);
  return /^rediss?:\/\//.test(spec) ? redisTotals(spec, month, prefix) : fileTotals(spec, month);
}

function fileTotals(file: string, month: MonthWindow): Map<string, number> {
  if (isLegacyQuotaFile(file)) return totalsOf(readLegacyQuotaFile(file).counts, month.start);
  let db: DatabaseSync | undefined;
  try {
    db = checkedDatabase(file, true);
    return totalsOf(readCounts(db, file, { unsaved: true }).counts, month.start);
  } catch (e) {
    if (!isBusy(e)) throw e;
    throw new TotalsUnreadable(`${file}: another process holds the quota database's lock (${(e as Error).message}); try again`, {
      cause: e,
    });
  } finally {
    db?.close();
  }
}

/** A Redis URL as it may be shown: without its password. */
export const shownUrl = (url: string): string => url.replace(/\/\/[^@/]*@/, '//***@');

async function redisTotals(url: string, month: MonthWindow, prefix: string): Promise<Map<string, number>> {
  const redis = new Redis(url, { lazyConnect: true, connectTimeout: 5_000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  let why = ''; // the connection's own failure (a wrong password), which "Connection is closed" would hide
  redis.on('error', (e: Error) => (why ||= e.message));
  try {
    await redis.connect();
    // The months' counters are found by their names: `<prefix><credential>:month:<month start>`.
    const suffix = redisKeys('', '', month)[1];
    const keys: string[] = [];
    for await (const batch of redis.scanStream({ match: `${prefix}*${suffix}`, count: 1_000 }) as AsyncIterable<string[]>)
      keys.push(...batch);
    const out = new Map<string, number>();
    for (let i = 0; i < keys.length; i += 1_000) {
      const slice = keys.slice(i, i + 1_000);
      const values = await redis.mget(...slice);
      slice.forEach((key, j) => {
        const n = Number(values[j] ?? 0);
        if (n > 0) out.set(key.slice(prefix.length, key.length - suffix.length), n);
      });
    }
    return out;
  } catch (e) {
    throw new TotalsUnreadable(`${shownUrl(url)}: cannot read the quota counts (${why || (e as Error).message})`, { cause: e });
  } finally {
    redis.disconnect();
  }
}

/**
 * The month's totals as an edge deployment's quota directory holds them, through the worker's operator route.
 */
async function workerTotals(url: string, month: MonthWindow, token: string): Promise<Map<string, number>> {
  const name = monthName(month.start);
  const fail = (why: string) => new TotalsUnreadable(`${url}: ${why}`);
  let body: { month?: unknown; credentials?: unknown };
  try {
    body = (await operatorRequest(url, `${OPERATOR_USAGE}?month=${name}`, token)) as typeof body;
  } catch (e) {
    throw e instanceof OperatorUnreachable ? new TotalsUnreadable(e.message, { cause: e }) : e;
  }
  const totals = body.credentials && typeof body.credentials === 'object' ? Object.entries(body.credentials) : null;
  if (body.month !== name || !totals || totals.some(([, n]) => !Number.isSafeInteger(n) || (n as number) < 0))
    throw fail(`the worker's answer is not the month's totals ({"month": "${name}", "credentials": {...}})`);
  return new Map((totals as [string, number][]).filter(([, n]) => n > 0));
}
