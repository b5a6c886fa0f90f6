/**
 * `risk-readings webhooks list|disable|enable` (decision 108): the operator's view of every customer's webhook
 * endpoints in the store `serve` keeps them in (the SQLite database or Redis of `--quotas`, else
 * RISK_READINGS_QUOTAS), or an edge deployment's through its worker's operator routes (RISK_READINGS_OPERATOR_TOKEN),
 * and the two switches an operator needs: stop delivering to an endpoint, and start again from its first message not
 * delivered. Secrets are never printed. A running `serve` sees a change at its next look.
 */
import { resolve } from 'node:path';
import { checkedDatabase, QuotaStoreDamaged } from '../../auth-shim/node/quota-database.js';
import { RedisWebhookStore } from '../../auth-shim/node/webhooks-redis.js';
import { SqliteWebhookStore } from '../../auth-shim/node/webhooks-sqlite.js';
import { OPERATOR_WEBHOOKS } from '../../auth-shim/edge-operator.js';
import { isWorkerUrl, OperatorUnreachable, operatorRequest } from '../../auth-shim/node/operator-client.js';
import { operatorView, switchEndpoint, type OperatorView, type WebhookStore } from '../../auth-shim/webhooks/store.js';

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

/** What the commands do with a store: list its endpoints, switch one (false: no such endpoint). */
interface Endpoints {
  list(): Promise<OperatorView[]>;
  switchTo(id: string, enable: boolean, reason?: string): Promise<boolean>;
}

/** A store's endpoints, through its WebhookStore. */
const local = (s: WebhookStore): Endpoints => ({
  list: async () => (await s.list()).map(operatorView),
  switchTo: (id, enable, reason) => switchEndpoint(s, id, enable, Date.now(), reason),
});

/** An edge deployment's, through its worker's operator routes, with RISK_READINGS_OPERATOR_TOKEN. */
function worker(url: string): Endpoints {
  const token = process.env.RISK_READINGS_OPERATOR_TOKEN?.trim();
  if (!token)
    throw new Stop(
      2,
      `${url}: reading an edge deployment needs its operator token: set RISK_READINGS_OPERATOR_TOKEN to the worker's OPERATOR_TOKEN (docs/edge.md)`,
    );
  const ask = async <T>(path: string, body?: unknown): Promise<T> => {
    try {
      return (await operatorRequest(url, path, token, body === undefined ? {} : { method: 'POST', body })) as T;
    } catch (e) {
      throw e instanceof OperatorUnreachable ? new Stop(1, e.message) : e;
    }
  };
  return {
    list: async () => (await ask<{ endpoints: OperatorView[] }>(OPERATOR_WEBHOOKS)).endpoints,
    switchTo: async (id, enable, reason) => (await ask(`${OPERATOR_WEBHOOKS}/${id}/${enable ? 'enable' : 'disable'}`, { reason }), true),
  };
}

/** The endpoints of the store named by --quotas or RISK_READINGS_QUOTAS; exit 2 without one, 3 when it is damaged. */
async function withEndpoints<T>(o: WebhooksFlags, work: (e: Endpoints) => Promise<T>): Promise<T> {
  const spec = o.quotas ?? process.env.RISK_READINGS_QUOTAS;
  if (!spec)
    throw new Stop(
      2,
      '--quotas <file|redis://host:port|https://worker> is required (or RISK_READINGS_QUOTAS): the store serve or the edge keeps endpoints in',
    );
  if (isWorkerUrl(spec)) return work(worker(spec));
  if (/^rediss?:\/\//.test(spec)) {
    const store = new RedisWebhookStore(spec);
    try {
      return await work(local(store));
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
    return await work(local(new SqliteWebhookStore(db)));
  } finally {
    db.close();
  }
}

export const list = stopping(async (o: WebhooksFlags): Promise<void> => {
  const endpoints = await withEndpoints(o, (e) => e.list());
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
  const found = await withEndpoints(o, (e) => e.switchTo(id, enable, o.reason));
  if (!found) throw new Stop(1, `no endpoint ${id} in ${o.quotas ?? process.env.RISK_READINGS_QUOTAS}; webhooks list shows them`);
  process.stderr.write(`${id}: ${enable ? 'enabled; deliveries resume from its first message not delivered' : 'disabled'}\n`);
}

export const disable = stopping((id: string, o: WebhooksFlags) => change(id, o, false));
export const enable = stopping((id: string, o: WebhooksFlags) => change(id, o, true));
