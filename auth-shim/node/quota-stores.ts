/**
 * `serve --quotas`: the store the Node server counts in (decision 21): a SQLite database on local disk (the default,
 * beside the tree), Redis shared by a fleet behind the in-process fallback, or memory for this process alone.
 */
import { resolve } from 'node:path';
import { MemoryQuotaStore, type QuotaStore } from '../quota.js';
import { redisWithFallback } from './quota-redis.js';
import { SqliteQuotaStore } from './quota-sqlite.js';
import { MemoryWebhookStore, type WebhookStore } from '../webhooks/store.js';
import { RedisWebhookStore } from './webhooks-redis.js';
import { SqliteWebhookStore } from './webhooks-sqlite.js';

export { QuotaStoreDamaged, QuotaStoreHeld, QuotaStoreUnwritable } from './quota-sqlite.js';
export { UnrecordedCharges } from '../quota.js';
export { LegacyQuotaDamaged } from './quota-import.js';

export interface OpenOptions {
  /** `serve --discard-damaged-quotas`: a damaged database is set aside and counting goes on from the rows that read. */
  discardDamaged?: boolean;
  /** A quota file of an earlier release to import when the database is not there yet (the default's old name). */
  legacy?: string;
  /** Where a stop keeps the charges it could not record in Redis, and the next start takes them in (the tree's folder). */
  owedDir?: string;
}

export async function openQuotaStore(spec: string, log: (m: string) => void, waitMs?: number, o: OpenOptions = {}): Promise<QuotaStore> {
  if (/^rediss?:\/\//.test(spec)) return redisWithFallback(spec, log, o.owedDir);
  if (spec === 'memory') return new MemoryQuotaStore();
  return SqliteQuotaStore.open(resolve(spec), { log, waitMs, discardDamaged: o.discardDamaged, legacy: o.legacy && resolve(o.legacy) });
}

/**
 * The webhook store beside a quota store (decision 108): the same SQLite database, the same Redis, or memory. Its
 * `close` lets go of what the quota store's does not (a Redis connection of its own).
 */
export function webhookStoreBeside(quotas: QuotaStore, spec: string): WebhookStore & { close?(): Promise<void> } {
  if (quotas instanceof SqliteQuotaStore) return new SqliteWebhookStore(quotas);
  if (/^rediss?:\/\//.test(spec)) return new RedisWebhookStore(spec);
  return new MemoryWebhookStore();
}
