/**
 * `risk-readings webhooks list|disable|enable` (decision 108): the operator's view of every customer's webhook
 * endpoints in the store `serve` keeps them in (the SQLite database or Redis of `--quotas`, else
 * RISK_READINGS_QUOTAS), and the two switches an operator needs: stop delivering to an endpoint, and start again
 * from its first message not delivered. Secrets are never printed. A running `serve` sees a change at its next look.
 */
import { resolve } from 'node:path';
import { checkedDatabase, QuotaStoreDamaged } from '../../auth-shim/node/quota-sqlite.js';
import { RedisWebhookStore } from '../../auth-shim/node/webhooks-redis.js';
import { SqliteWebhookStore } from '../../auth-shim/node/webhooks-sqlite.js';
import { disabledBy, enabledAgain, type EndpointRecord, type WebhookStore } from '../../auth-shim/webhooks/store.js';

export interface WebhooksFlags {
  quotas?: string;
  json?: boolean;
  reason?: string;
}

/** A command that cannot go on: its message and exit status (1 no such endpoint, 2 usage, 3 a damaged store). */
class Stop extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Runs a command, a Stop said on stderr with its status. */
const stopping =
  <A extends unknown[]>(run: (...a: A) => Promise<void>) =>
  async (...a: A): Promise<void> => {
    try {
      await run(...a);
    } catch (e) {
      if (!(e instanceof Stop)) throw e;
      process.stderr.write(`risk-readings webhooks: ${e.message}\n`);
      process.exitCode = e.status;
    }
  };

/** The store named by --quotas or RISK_READINGS_QUOTAS, open; exit 2 without one, 3 when it is damaged. */
async function withStore<T>(o: WebhooksFlags, work: (s: WebhookStore) => Promise<T>): Promise<T> {
  const spec = o.quotas ?? process.env.RISK_READINGS_QUOTAS;
  if (!spec)
    throw new Stop(2, '--quotas <file|redis://host:port> is required (or RISK_READINGS_QUOTAS): the store serve keeps endpoints in');
  if (/^rediss?:\/\//.test(spec)) {
    const store = new RedisWebhookStore(spec);
    try {
      return await work(store);
    } finally {
      await store.close();
    }
  }
  let db;
  try {
    db = checkedDatabase(resolve(spec));
  } catch (e) {
    if (e instanceof QuotaStoreDamaged) throw new Stop(3, e.message);
    throw e;
  }
  try {
    return await work(new SqliteWebhookStore(db));
  } finally {
    db.close();
  }
}

/** An endpoint as the operator sees it: everything but its secrets and the message's bytes. */
const shown = (e: EndpointRecord) => ({
  id: e.id,
  owner: e.owner,
  plan: e.plan,
  url: e.url,
  enabled: e.enabled,
  disabled_reason: e.disabled_reason,
  created_at: e.created_at,
  delivered_through: e.delivered_through,
  in_flight: e.pending && { message_id: e.pending.id, attempt: e.pending.attempt, next_at: new Date(e.pending.next_at).toISOString() },
  filters: { fields: e.fields, symbols: e.symbols, universes: e.universes },
});

export const list = stopping(async (o: WebhooksFlags): Promise<void> => {
  const endpoints = (await withStore(o, (s) => s.list())).map(shown);
  if (o.json) return void process.stdout.write(JSON.stringify(endpoints, null, 2) + '\n');
  const rows = endpoints.map((e) => [
    e.id,
    e.owner,
    e.enabled ? 'enabled' : 'disabled',
    String(e.delivered_through),
    e.in_flight ? `${e.in_flight.message_id} (attempt ${e.in_flight.attempt}, next ${e.in_flight.next_at})` : '-',
    e.url,
  ]);
  const head = ['id', 'owner', 'state', 'through', 'in flight', 'url'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  for (const r of [head, ...rows])
    process.stdout.write(
      r
        .map((c, i) => c.padEnd(widths[i]!))
        .join('  ')
        .trimEnd() + '\n',
    );
  for (const e of endpoints) if (e.disabled_reason) process.stdout.write(`${e.id}: ${e.disabled_reason}\n`);
});

async function change(id: string, o: WebhooksFlags, enable: boolean): Promise<void> {
  const now = Date.now();
  await withStore(o, async (s) => {
    const e = await s.get(id);
    if (!e) throw new Stop(1, `no endpoint ${id} in ${o.quotas ?? process.env.RISK_READINGS_QUOTAS}; webhooks list shows them`);
    await s.set(id, enable ? enabledAgain(e, now) : disabledBy('the operator', now, o.reason));
  });
  process.stderr.write(`${id}: ${enable ? 'enabled; deliveries resume from its first message not delivered' : 'disabled'}\n`);
}

export const disable = stopping((id: string, o: WebhooksFlags) => change(id, o, false));
export const enable = stopping((id: string, o: WebhooksFlags) => change(id, o, true));
