/**
 * One example response per operation (decision 25), taken from the tree being built, so the document shows
 * what the API answers today: the free tier's first asset, a short history page, a bulk call naming a symbol
 * that is not served, the first events of the latest refresh that raised any, a basic key's standing in the month
 * the tree was built. The webhook routes answer a caller's own endpoints, which no tree holds: their examples are one
 * fixed endpoint, dated from the build, and its messages carry the latest refresh's events.
 */
import { createHash } from 'node:crypto';
import {
  bulkBody,
  changesPage,
  DISCLAIMER,
  historyPage,
  PLAN_LIMITS,
  TREE,
  usageBody,
  type ChangeLedger,
  type Ledger,
  type RiskDoc,
} from '../contract/index.js';
import { WEBHOOK_ENDPOINTS, WEBHOOK_MESSAGE_EVENTS, WEBHOOK_OLD_SECRET_MS, WEBHOOK_RETRY_MS } from '../contract/webhooks.js';
import type { ChangeEvent, WebhookAttempt, WebhookChangesMessage, WebhookEndpoint } from '../contract/shapes.js';
import type { Examples } from './document.js';

type Doc = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export function operationExamples(files: Map<string, unknown>, info: object): Examples {
  const get = (path: string) => files.get(path) as Doc | undefined;
  const list = get(TREE.assetList('basic'))!;
  const symbols: string[] = list.data.assets.map((a: { symbol: string }) => a.symbol);
  // With no free tier (no ranking read yet) the examples quote the first asset any plan may read.
  const first = symbols[0] ?? (get(TREE.assetList('ultra'))!.data.assets[0] as { symbol: string }).symbol;
  const dcaSymbol = symbols.find((s) => files.has(TREE.dcaSignal(s)));
  const history = get(TREE.historyFull(first)) as Ledger;
  const page = historyPage(history, { limit: 3, maxLimit: PLAN_LIMITS.pro.historyCap });
  const requested = [...new Set([first, ...symbols.slice(0, 2)])].slice(0, 2).concat('NOTSERVED');
  const feed = get(TREE.changes) as ChangeLedger;
  const day = feed.events.at(-1)?.published_at.slice(0, 10);
  const window = day ? `from=${day}&to=${day}&` : '';
  const out: Examples = {
    listAssets: { summary: 'GET /v1/assets with a basic key', value: list },
    getAssetRisk: { summary: `GET /v1/assets/${first}/risk`, value: get(TREE.risk(first)) },
    getAssetHistory: { summary: `GET /v1/assets/${first}/history?limit=3 with a pro key`, value: page },
    getBulkRisk: {
      summary: `GET /v1/bulk/risk?symbols=${requested.join(',')}`,
      value: bulkBody(
        requested,
        requested.map((s) => get(TREE.risk(s)) as RiskDoc | undefined),
      ),
    },
    getChanges: {
      summary: `GET /v1/changes?${window}limit=3 with a pro key`,
      value: changesPage(feed, { limit: 3, maxLimit: PLAN_LIMITS.pro.historyCap, from: day, to: day }, 'all'),
    },
    getUniverseSummary: { summary: 'GET /v1/market/crypto/summary', value: get(TREE.summary('crypto')) },
    getHealth: { summary: 'GET /v1/health', value: get(TREE.health) },
    getOpenApi: { summary: 'GET /v1/openapi.json (its opening members only)', value: { openapi: '3.1.0', info } },
    getUsage: { summary: 'GET /v1/usage with a basic key', value: usageExample(get(TREE.health)!.built_at as string) },
    ...webhookExamples(
      get(TREE.health)!.built_at as string,
      feed,
      list.data.assets[0] ?? get(TREE.assetList('ultra'))!.data.assets[0] ?? null,
    ),
  };
  if (dcaSymbol) out.getDcaSignal = { summary: `GET /v1/signals/dca/${dcaSymbol}`, value: get(TREE.dcaSignal(dcaSymbol)) };
  return out;
}

/** A basic key's standing in the month the tree was built: one call in the minute, part of the month used. */
function usageExample(builtAt: string) {
  const at = new Date(builtAt);
  const [start, end] = [0, 1].map((n) => Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + n, 1)) as [number, number];
  return usageBody(
    { plan: 'basic', credential: 'key:1a2b3c4d', label: 'Acme Corp', expires: null },
    { minuteUsed: 1, resetMs: 60_000, monthUsed: 42, monthStart: start, monthEnd: end },
  );
}

/** The endpoint the webhook examples show. */
const ENDPOINT = 'ep_5f1c2a9e8b7d6c4a3f2e1d0c';
const URL = 'https://hooks.example.com/risk-readings';
/** A secret of the right shape, made the same way every build. */
const secret = (seed: string) => `whsec_${createHash('sha256').update(seed).digest('base64')}`;
const envelope = (data: unknown) => ({ as_of: null, model_version: null, disclaimer: DISCLAIMER, data });

/** The request bodies the document shows: a create with filters, and a change that pauses an endpoint. */
export const WEBHOOK_REQUESTS = {
  create: {
    summary: 'Gravity level and phase moves of two assets, to a desk',
    value: { url: URL, fields: ['gravity.risk_level', 'phase.label'], symbols: ['BTC', 'ETH'], description: 'Trading desk alerts' },
  },
  update: { summary: 'Pause deliveries', value: { enabled: false } },
};

/**
 * The webhook routes' answers and messages: an endpoint created two days before the build that has received the whole
 * feed, its test and deliveries at the build's time, and the message the latest refresh sends an endpoint without filters.
 */
function webhookExamples(builtAt: string, feed: ChangeLedger, asset: { symbol: string; as_of: string | null } | null): Examples {
  const at = Date.parse(builtAt);
  const iso = (ms: number) => new Date(ms).toISOString();
  const endpoint: WebhookEndpoint = {
    id: ENDPOINT,
    url: URL,
    fields: WEBHOOK_REQUESTS.create.value.fields,
    symbols: WEBHOOK_REQUESTS.create.value.symbols,
    universes: [],
    description: WEBHOOK_REQUESTS.create.value.description,
    enabled: true,
    disabled_reason: null,
    created_at: iso(at - 2 * 86_400_000),
    delivered_through: feed.events.length,
    pending: 0,
  };
  // The latest refresh's events, as an endpoint without filters on a pro plan receives them.
  const last = feed.events.at(-1);
  const first = last ? feed.events.findIndex((e) => e.published_at === last.published_at) : 0;
  // A feed with no event yet (a first build): the free tier's first asset entering the catalogue.
  const entered: ChangeEvent[] = asset
    ? [
        {
          published_at: builtAt,
          symbol: asset.symbol,
          universe: null,
          field: 'catalogue',
          from: false,
          to: true,
          model: null,
          as_of: asset.as_of,
        },
      ]
    : [];
  const events = last ? feed.events.slice(first, first + WEBHOOK_MESSAGE_EVENTS) : entered;
  const message: WebhookChangesMessage = {
    type: 'changes.published',
    published_at: last?.published_at ?? iso(at),
    from_position: first + 1,
    to_position: first + Math.max(1, events.length),
    events,
  };
  const delivered = `msg_${ENDPOINT}_${message.to_position}`;
  const test = `msg_${ENDPOINT}_test_${at}`;
  const attempt = (message_id: string, n: number, ms: number, status: number, error: string | null): WebhookAttempt => ({
    message_id,
    attempt: n,
    at: iso(ms),
    status,
    error,
    ms: 182,
  });
  const sent = Date.parse(message.published_at) + 1_000;
  const out: Examples = {
    listWebhookEndpoints: {
      summary: 'GET /v1/webhooks with a pro key',
      value: envelope({ endpoints: [endpoint], max_endpoints: WEBHOOK_ENDPOINTS.pro }),
    },
    createWebhookEndpoint: {
      summary: 'POST /v1/webhooks',
      value: envelope({ ...endpoint, secret: secret('created') }),
    },
    getWebhookEndpoint: { summary: `GET /v1/webhooks/${ENDPOINT}`, value: envelope(endpoint) },
    updateWebhookEndpoint: {
      summary: `PATCH /v1/webhooks/${ENDPOINT} with {"enabled": false}`,
      value: envelope({ ...endpoint, enabled: false, disabled_reason: `disabled by its owner at ${iso(at)}` }),
    },
    testWebhookEndpoint: { summary: `POST /v1/webhooks/${ENDPOINT}/test`, value: envelope(attempt(test, 1, at, 200, null)) },
    rotateWebhookSecret: {
      summary: `POST /v1/webhooks/${ENDPOINT}/rotate-secret`,
      value: envelope({ ...endpoint, secret: secret('rotated'), previous_secret_expires_at: iso(at + WEBHOOK_OLD_SECRET_MS) }),
    },
    listWebhookDeliveries: {
      summary: `GET /v1/webhooks/${ENDPOINT}/deliveries`,
      value: envelope({
        endpoint_id: ENDPOINT,
        deliveries: [
          attempt(test, 1, at, 200, null),
          attempt(delivered, 2, sent + WEBHOOK_RETRY_MS[0], 200, null),
          attempt(delivered, 1, sent, 503, 'hooks.example.com answered 503'),
        ],
      }),
    },
    webhookTest: { summary: 'webhook.test', value: { type: 'webhook.test', endpoint_id: ENDPOINT, sent_at: iso(at) } },
  };
  if (events.length)
    out.changesPublished = { summary: `The refresh of ${message.published_at}, to an endpoint without filters`, value: message };
  return out;
}
