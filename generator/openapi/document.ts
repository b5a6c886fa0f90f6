/**
 * The API's own OpenAPI 3.1 document (version 1.0.0): the operations written here, the schemas generated from
 * the contract's shapes (schemas.ts from contract/shapes.ts). Two forms
 * (decision 25): closed (additionalProperties: false), which the build validates every file against so that it
 * cannot publish a field the contract does not describe; and served, open, so that a client generated from it
 * does not break when v1 adds a field, with `servers` and one example response per operation from the build.
 */
import { API_VERSION, SYMBOL_PATTERN, UNIVERSES } from '../contract/constants.js';
import { ERROR_STATUS, errorBody, type ErrorCode } from '../contract/errors.js';
import { BULK_MAX_SYMBOLS, HISTORY_DEFAULT_LIMIT, HISTORY_MAX_LIMIT, PLAN_LIMITS } from '../contract/plans.js';
import {
  WEBHOOK_ATTEMPTS_KEPT,
  WEBHOOK_BODY_MAX,
  WEBHOOK_ENDPOINTS,
  WEBHOOK_MESSAGE_EVENTS,
  WEBHOOK_OLD_SECRET_MS,
  WEBHOOK_RETRY_AFTER_MAX_MS,
  WEBHOOK_RETRY_MS,
  WEBHOOK_TIMEOUT_MS,
} from '../contract/webhooks.js';
import { z } from 'zod';
import { REQUEST_IDS } from '../contract/shapes.js';
import { WEBHOOK_REQUESTS } from './examples.js';
import { componentSchemas } from './schemas.js';

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const requestIdHeader = {
  'X-Request-Id': {
    schema: { type: 'string' },
    description:
      'This response\'s id, for support: the request\'s own X-Request-Id when it is 1-64 letters, digits, ".", "_" or "-", else a new one.',
  },
};
/** A message the gateway sends with each code, for the examples: what a client meets, not a template. */
const EXAMPLE_MESSAGES: Record<ErrorCode, string> = {
  bad_symbol: 'A symbol is 1 to 20 letters, digits, _ . -',
  bad_universe: 'A universe name is 1 to 40 letters, digits, _ or -',
  bad_parameter: 'limit must be an integer from 1 to 1000',
  too_many_symbols: '26 symbols requested; at most 25 per call',
  unauthorized: 'The credential sent in X-API-Key is not valid',
  plan_required: 'NVDA requires the pro or ultra plan; your plan is basic.',
  not_found: 'No such endpoint; see /v1/openapi.json and /docs',
  unknown_asset: 'No asset NOTSERVED is served',
  unknown_universe: 'No universe europe; the universes are crypto, ai_infrastructure, quantum, bitcoin_equities, us_stock_market',
  no_signal: 'SPY has no regression model, so no DCA signal',
  method_not_allowed: 'POST is not allowed on this path; use GET or HEAD',
  rate_limited: "Quota exceeded: the basic plan's 5 requests per minute; retry in 41 s",
  quota_exceeded: "Quota exceeded: the basic plan's 1000 requests this month (UTC); retry in 432000 s",
  upstream_error: 'The data origin could not be read',
  gateway_not_configured: 'No credential source is configured on this gateway',
};
/**
 * An error response: its description names its codes, and each code has an example body of its own (`messages`
 * where a route words one otherwise than EXAMPLE_MESSAGES).
 */
const error = (description: string, codes: ErrorCode[], headers?: object, messages: Partial<Record<ErrorCode, string>> = {}) => ({
  description: `${description} (error.code: ${codes.join(', ')})`,
  headers: { ...requestIdHeader, ...headers },
  content: {
    'application/json': {
      schema: ref('Error'),
      examples: Object.fromEntries(
        codes.map((code) => [code, { summary: code, value: errorBody(code, messages[code] ?? EXAMPLE_MESSAGES[code]) }]),
      ),
    },
  },
});
const rateHeaders = {
  'RateLimit-Limit': { schema: { type: 'integer' }, description: 'Requests allowed in the current per-minute window.' },
  'RateLimit-Remaining': { schema: { type: 'integer' } },
  'RateLimit-Reset': { schema: { type: 'integer' }, description: 'Seconds until the window resets.' },
  'X-RateLimit-Requests-Limit': { schema: { type: 'integer' }, description: "The plan's requests a calendar month (UTC)." },
  'X-RateLimit-Requests-Remaining': { schema: { type: 'integer' }, description: 'Requests this month still admits.' },
  'X-RateLimit-Requests-Reset': { schema: { type: 'integer' }, description: 'Seconds until the next calendar month (UTC).' },
  'RateLimit-Policy': {
    schema: { type: 'string', examples: ['"minute";q=60;w=60, "month";q=10000;w=2678400'] },
    description:
      'Both windows as the IETF rate-limit fields (draft 11, an RFC 8941 list): q the quota, w the window in seconds (the current calendar month, UTC, for "month").',
  },
  RateLimit: {
    schema: { type: 'string', examples: ['"minute";r=59;t=60, "month";r=9999;t=1209600'] },
    description: 'Where the caller stands in each policy (draft 11): r requests remaining, t seconds until it resets.',
  },
};
const okHeaders = {
  ...requestIdHeader,
  ...rateHeaders,
  ETag: {
    schema: { type: 'string' },
    description: 'Strong tag from the build manifest, one per content coding; If-None-Match matches any of them.',
  },
  'Cache-Control': { schema: { type: 'string', const: 'private, max-age=60' } },
  Vary: { schema: { type: 'string' }, description: 'Every credential header the gateway reads, and Accept-Encoding for bodies over 1 KB.' },
  'Content-Encoding': {
    schema: { type: 'string', enum: ['br', 'gzip'] },
    description: "Bodies over 1 KB as the request's Accept-Encoding allows, br preferred.",
  },
};
/**
 * Revalidation (decisions 18 and 23): a client sends back the ETag it holds and is answered 304 with no body when it
 * still matches. Declared on every operation that answers 304, so a generated client can send it as it sends a
 * query parameter.
 */
const ifNoneMatch = {
  name: 'If-None-Match',
  in: 'header',
  required: false,
  schema: { type: 'string' },
  description:
    'The ETag of an earlier response (of any content coding), or several, comma-separated, or *: when one matches, the answer is 304 Not Modified with no body.',
};
const notModified = { '304': { description: 'Not modified: If-None-Match matched the ETag.', headers: requestIdHeader } };
/** A data route's 304 is counted toward the minute (decision 35), so it says where the windows stand, as a 200 does. */
const countedNotModified = {
  '304': {
    description: 'Not modified: If-None-Match matched the ETag; counted toward the minute, not the month.',
    headers: {
      ...requestIdHeader,
      ...rateHeaders,
      ETag: okHeaders.ETag,
      'Cache-Control': okHeaders['Cache-Control'],
      Vary: okHeaders.Vary,
    },
  },
};
const common = {
  ...countedNotModified,
  '401': error('No valid credential; the message names the header forms the request tried', ['unauthorized'], {
    'WWW-Authenticate': {
      schema: { type: 'string', const: 'ApiKey header="X-API-Key"' },
      description: 'The credential this API takes: a key in the X-API-Key header.',
    },
  }),
  '403': error('The plan does not cover the asset or endpoint; the message names the asset and the plan needed', ['plan_required']),
  '405': error(
    'Any method but GET and HEAD, OPTIONS included but the preflight of a page whose origin the operator allows (answered 204); an Allow: GET, HEAD header is sent',
    ['method_not_allowed'],
    { Allow: { schema: { type: 'string', const: 'GET, HEAD' } } },
  ),
  '429': error('Per-minute window or calendar-month (UTC) quota exceeded, per credential', ['rate_limited', 'quota_exceeded'], {
    'Retry-After': { schema: { type: 'integer' } },
    ...rateHeaders,
  }),
  '502': error('The data origin could not be read', ['upstream_error']),
  '503': error('The gateway has no credential source configured', ['gateway_not_configured'], {
    'Retry-After': { schema: { type: 'integer' }, description: 'Seconds to wait before asking again.' },
  }),
};
const ok = (schema: string, description: string) => ({
  '200': { description, headers: okHeaders, content: { 'application/json': { schema: ref(schema) } } },
});
const symbolParam = {
  name: 'symbol',
  in: 'path',
  required: true,
  description: 'Case-insensitive; answered with the canonical symbol.',
  schema: { type: 'string', pattern: SYMBOL_PATTERN.source },
};
const date = { type: 'string', format: 'date' };
const limitParam = {
  name: 'limit',
  in: 'query',
  schema: { type: 'integer', minimum: 1, maximum: HISTORY_MAX_LIMIT, default: HISTORY_DEFAULT_LIMIT },
  description: `Clamped to the plan's cap (basic ${PLAN_LIMITS.basic.historyCap}); when omitted, ${HISTORY_DEFAULT_LIMIT} or the cap if smaller. Not an integer in 1..${HISTORY_MAX_LIMIT}: 400 bad_parameter.`,
};
/**
 * The bulk list as the gateway takes it: 1 to BULK_MAX_SYMBOLS symbols, commas between; spaces around a symbol and
 * empty entries (stray commas) are ignored.
 */
const SYMBOL = SYMBOL_PATTERN.source.replace(/^\^|\$$/g, '');
const BULK_PATTERN = `^[ ,]*${SYMBOL}( *,[ ,]*${SYMBOL}){0,${BULK_MAX_SYMBOLS - 1}}[ ,]*$`;
const get = (operationId: string, summary: string, tag: Tag, extra: object) => ({
  get: { operationId, summary, description: DESCRIPTIONS[operationId], tags: [tag], ...extra },
});
/** An operation of any method. */
const operation = (operationId: string, summary: string, tag: Tag, extra: object) => ({
  operationId,
  summary,
  description: DESCRIPTIONS[operationId],
  tags: [tag],
  ...extra,
});

// The webhook routes (decision 108): a caller's own endpoints, counted toward the per-minute window only, never cached.
const noStore = { 'Cache-Control': { schema: { type: 'string', const: 'no-store' } } };
const webhookHeaders = { ...requestIdHeader, ...rateHeaders, ...noStore };
const webhookOk = (status: '200' | '201', schema: string, description: string, headers: object = {}) => ({
  [status]: { description, headers: { ...webhookHeaders, ...headers }, content: { 'application/json': { schema: ref(schema) } } },
});
const ENDPOINT_ID = '^ep_[0-9a-f]{24}$';
const endpointParam = {
  name: 'id',
  in: 'path',
  required: true,
  description: "The endpoint's id, as created: ep_ and 24 hex digits.",
  schema: { type: 'string', pattern: ENDPOINT_ID },
};
/** A marketplace caller manages webhooks as its user; a direct key's endpoints belong to its label. */
const marketplaceUser = {
  name: 'x-marketplace-user',
  in: 'header',
  required: false,
  schema: { type: 'string', minLength: 1, maxLength: 256 },
  description:
    "Through a marketplace only: the subscriber whose endpoints these are (the marketplace's own x-<name>-user header is read too). A direct key's endpoints belong to its label, so a rolled key keeps them.",
};
const webhookMessages = {
  bad_parameter: 'url: the address must be https (http only to loopback where the operator allows it)',
  not_found: 'No webhook endpoint ep_5f1c2a9e8b7d6c4a3f2e1d0c of yours; GET /v1/webhooks lists them',
  plan_required:
    'The basic plan holds at most 1 webhook endpoint; delete one, or move to a plan that holds more (basic 1, pro 5, ultra 25)',
  rate_limited: "Quota exceeded: the basic plan's 5 requests per minute; retry in 41 s",
} satisfies Partial<Record<ErrorCode, string>>;
/** The refusals every webhook route may answer; `allow` is the route's methods, named by a 405's Allow. */
const webhookErrors = (allow: string) => ({
  '401': common['401'],
  '404': error(
    "No endpoint of yours by that id (another caller's is not yours), or this gateway delivers no webhooks",
    ['not_found'],
    undefined,
    webhookMessages,
  ),
  '405': error(
    `A method the route does not take; the Allow header names those it does`,
    ['method_not_allowed'],
    {
      Allow: { schema: { type: 'string', enum: [allow] } },
    },
    { method_not_allowed: `PUT is not allowed here; use ${allow.split(', ').join(' or ')}` },
  ),
  '429': error('Per-minute window exceeded, per credential; the webhook routes never count toward the month', ['rate_limited'], {
    'Retry-After': { schema: { type: 'integer' } },
    ...rateHeaders,
  }),
  '502': common['502'],
  '503': common['503'],
});
const badBody = error(
  `A member of the body is wrong (the message names it), a member the request does not take, or the body is not JSON or is over ${WEBHOOK_BODY_MAX / 1024} KB`,
  ['bad_parameter'],
  undefined,
  webhookMessages,
);
const jsonBody = (schema: string, example: { summary: string; value: unknown }) => ({
  required: true,
  content: { 'application/json': { schema: ref(schema), examples: { [schema]: example } } },
});
/** What a receiver is sent with every message, as Standard Webhooks names them. */
const deliveryHeaders = (id: string) => [
  {
    name: 'webhook-id',
    in: 'header',
    required: true,
    schema: { type: 'string' },
    description: `The message's id, ${id}: the same on every retry of the message, so a receiver can skip one it has processed.`,
  },
  {
    name: 'webhook-timestamp',
    in: 'header',
    required: true,
    schema: { type: 'string', pattern: '^[0-9]{1,12}$' },
    description:
      'When this attempt was signed, in seconds since the epoch: refuse a message far from your clock (Standard Webhooks: 5 minutes).',
  },
  {
    name: 'webhook-signature',
    in: 'header',
    required: true,
    schema: { type: 'string', pattern: '^v1,[A-Za-z0-9+/]{43}=( v1,[A-Za-z0-9+/]{43}=)*$' },
    description: `v1, and the base64 HMAC-SHA256, keyed by the endpoint's secret (the base64 after whsec_, decoded), of webhook-id, ".", webhook-timestamp, "." and the body as sent. After a secret is rotated the previous one signs too for ${WEBHOOK_OLD_SECRET_MS / 3600_000} hours: the signatures are then space-separated, and a receiver accepts the message when any one matches. The standardwebhooks package verifies all of this.`,
  },
  { name: 'content-type', in: 'header', required: true, schema: { type: 'string', enum: ['application/json'] } },
  { name: 'user-agent', in: 'header', required: true, schema: { type: 'string', enum: ['risk-readings-webhooks/1'] } },
];
const retryHours = Math.round(WEBHOOK_RETRY_MS.reduce((a, b) => a + b, 0) / 3600_000);
/** What a receiver answers, and what the gateway makes of it. */
const deliveryResponses = {
  '2XX': {
    description: `Delivered: any 2xx within ${WEBHOOK_TIMEOUT_MS / 1000} s; its body is ignored. Answer first, then process.`,
  },
  '410': {
    description:
      'Gone: the endpoint is disabled at once (its disabled_reason says so) and the message waits; PATCH enabled: true resumes it.',
  },
  default: {
    description: `Anything else, or no answer within ${WEBHOOK_TIMEOUT_MS / 1000} s: the message is tried again after ${WEBHOOK_RETRY_MS.map((ms) => (ms < 60_000 ? `${ms / 1000} s` : ms < 3600_000 ? `${ms / 60_000} min` : `${ms / 3600_000} h`)).join(', ')} (each +-10%), about ${retryHours} hours in all; after the last the endpoint is disabled. Later messages wait for it: an endpoint receives its messages in feed order.`,
    headers: {
      'Retry-After': {
        schema: { type: 'string' },
        description: `Seconds or an HTTP-date: the next attempt waits at least that long, up to ${WEBHOOK_RETRY_AFTER_MAX_MS / 3600_000} hours.`,
      },
    },
  },
};

/** What each operation answers and for whom, in the words a customer looks for. */
const DESCRIPTIONS: Record<string, string> = {
  listAssets:
    'Every asset your plan may read, with its universes, the models that read it and the pages they came from. A basic plan lists the free tier; total_asset_count counts the whole catalogue.',
  getAssetRisk:
    "One asset's current readings: Gravity and TWAP, the SMA composite, the cycle phase, the DCA band, its price and its universe's market context, each with its own as_of.",
  getAssetHistory:
    "The asset's readings day by day, oldest first: daily rows from the first publication on, weekly rows mined from the pages' series before it. Page with limit and cursor; narrow with from and to.",
  getBulkRisk:
    "Up to 25 assets' readings in one call, as getAssetRisk gives them; symbols your plan does not cover or that are not served are listed in missing. Pro and ultra plans.",
  getUniverseSummary:
    'A universe at a glance: how its assets spread over the Gravity bands, its highest and lowest, and its barometer (fear & greed, peak/valley, macro risk). Basic plans read the crypto universe.',
  getDcaSignal:
    "The DCA regression model's band for an asset that has one: where the price sits between the model's levels. Never a position size.",
  getHealth:
    'Whether the gateway answers and how fresh its data is: when the data was built, its newest reading, and status stale once that is too old. No key needed.',
  getChanges:
    "What moved at each refresh, oldest first: an asset's Gravity or TWAP risk level, SMA composite band, cycle phase or DCA band; a universe's fear & greed label, peak/valley zone or macro risk status; an asset entering or leaving the free tier, the catalogue or stale_models. A basic plan sees its free-tier assets and the crypto universe. Page with limit and cursor; narrow with from and to.",
  getOpenApi: 'This document, with one example response per operation taken from the data being served. No key needed.',
  getUsage:
    'Your plan, its limits, and where your counts stand: requests in the rolling minute and in the calendar month (UTC), what each still admits and when it resets. Open to every plan; counts toward the minute, not the month, so calling it never uses up your month. Through a marketplace that counts for you, minute and month are null.',
  listWebhookEndpoints: `Your webhook endpoints, oldest first, and how many your plan holds (basic ${WEBHOOK_ENDPOINTS.basic}, pro ${WEBHOOK_ENDPOINTS.pro}, ultra ${WEBHOOK_ENDPOINTS.ultra}). Every webhook route counts toward the minute, never the month.`,
  createWebhookEndpoint: `A new endpoint: from now on each refresh's events that its filters pass and your plan sees are posted to its URL (the webhook changes.published). Answered with its signing secret, once. Past your plan's endpoints: 403 plan_required.`,
  getWebhookEndpoint:
    'One of your endpoints: its filters, whether it is enabled (and why not), how far it has received the change feed and how many messages wait.',
  updateWebhookEndpoint:
    'Changes the members given: the URL, a filter (replaced whole), the description, or enabled (false pauses deliveries, true resumes them at once from the first message not delivered).',
  deleteWebhookEndpoint: 'Removes the endpoint with its delivery log; nothing more is sent to it.',
  testWebhookEndpoint:
    "Sends the endpoint a webhook.test message now, signed as every message is, and answers the attempt: the receiver's status or why none came. It does not touch the change feed's deliveries.",
  rotateWebhookSecret: `A new signing secret, answered once. The previous one signs beside it for ${WEBHOOK_OLD_SECRET_MS / 3600_000} hours, so a receiver can switch without losing a message.`,
  listWebhookDeliveries: `The endpoint's recent attempts, newest first (at most ${WEBHOOK_ATTEMPTS_KEPT}): each message's attempts, the receiver's status and how long it took.`,
  changesPublished: `Posted after a refresh that raised events for the endpoint: those its filters pass and its owner's plan sees, in feed order, at most ${WEBHOOK_MESSAGE_EVENTS} a message. Verify webhook-signature, answer 2xx, then process; skip a webhook-id already processed.`,
  webhookTest: "Posted when the endpoint's owner asks for a test (POST /v1/webhooks/{id}/test); never retried.",
};

/** The operations' groups, in the order a reader meets them. */
const TAGS = [
  { name: 'assets', description: "The assets a plan may read, and one asset's readings." },
  { name: 'history', description: "An asset's readings day by day, paged oldest first." },
  { name: 'changes', description: 'What moved at each refresh, paged oldest first.' },
  { name: 'market', description: "A universe's readings at a glance, and several assets in one call." },
  { name: 'signals', description: "The DCA regression model's band for an asset." },
  { name: 'service', description: "The gateway's health and this document; no key needed." },
  { name: 'account', description: 'Your plan, its limits and where your counts stand.' },
  { name: 'webhooks', description: "Your endpoints for the change feed's push, and the messages posted to them." },
] as const;
type Tag = (typeof TAGS)[number]['name'];

const planRows = Object.entries(PLAN_LIMITS)
  .map(
    ([plan, l]) =>
      `| ${plan} | ${l.perMinute} | ${l.perMonth.toLocaleString('en-US')} | ${l.historyCap} | ${l.bulk ? `up to ${BULK_MAX_SYMBOLS}` : 'no'} |`,
  )
  .join('\n');
const errorRows = Object.entries(ERROR_STATUS)
  .map(([code, status]) => `| ${status} | \`${code}\` |`)
  .join('\n');

/** The guide every renderer shows above the operations: what a customer needs to call the API in an afternoon. */
const GUIDE = `Read-only quantitative risk readings for crypto and equity assets. Nothing is computed when a request arrives: every number is read from a published model page, so the API and the website agree. Descriptive statistics on past prices for educational use; not investment advice.

## Getting a key
Call with your key in the \`X-API-Key\` header. Keys are issued by the operator of this gateway (each key belongs to one plan), or through an API marketplace, which sends its own headers on your behalf (below).

## Plans and limits
| plan | requests a minute | requests a month | history rows a page | bulk |
|---|---|---|---|---|
${planRows}

The basic plan reads the free tier: the ten crypto assets with the smallest market-cap rank on the site's daily ranking, recomputed at each refresh. Counted responses carry \`RateLimit-Limit\`, \`RateLimit-Remaining\` and \`RateLimit-Reset\` (the minute: at most the plan's limit in any rolling 60 seconds) and \`X-RateLimit-Requests-Limit\`, \`-Remaining\` and \`-Reset\` (the calendar month, UTC), and both windows in the IETF fields \`RateLimit-Policy\` and \`RateLimit\` (draft 11). Past a limit the answer is \`429\` with \`Retry-After\`: \`rate_limited\` for the minute, \`quota_exceeded\` for the calendar month (UTC). A refused request is not counted. Every GET route also answers \`HEAD\`: the GET's status and headers without the body, counted toward the minute and not the month.

Revalidating is free for the month: a request with \`If-None-Match\` answered \`304 Not Modified\` counts toward the minute but not the month, and once the month is used up such a request is still answered \`304\` while your copy is current (anything else is \`quota_exceeded\`). \`GET /v1/usage\` answers your plan, limits and counts in one call, and counts toward the minute only.

## Rate limits and retries
Each counted answer says where both windows stand in the IETF fields, RFC 8941 lists that any structured-field parser reads (in JavaScript, \`parseList\` of the \`structured-headers\` package): \`RateLimit-Policy: "minute";q=5;w=60, "month";q=1000;w=2678400\` names each window with its quota \`q\` and its length \`w\` in seconds, and \`RateLimit: "minute";r=4;t=58, "month";r=997;t=1209600\` what each still admits (\`r\`) and the seconds until it resets (\`t\`). Every \`429\` and \`503\` carries \`Retry-After\` in seconds: wait that long, then try once more (sooner is refused again). With openapi-fetch, a middleware does it:

\`\`\`ts
client.use({
  async onResponse({ request, response, options }) {
    const after = response.headers.get('Retry-After');
    if ((response.status === 429 || response.status === 503) && after !== null && Number(after) <= 120) {
      await new Promise((resolve) => setTimeout(resolve, Number(after) * 1000));
      return options.fetch(new Request(request)); // once: a second 429 comes back to you
    }
  },
});
\`\`\`

What a request costs: an answer with data (\`200\`) counts toward the minute and the month; a \`304\` to \`If-None-Match\` with your copy's \`ETag\`, a \`HEAD\`, and an error answered to an accepted key (a \`400\`, a \`403\`, an unknown asset's \`404\`, a \`502\`) count toward the minute only; a \`429\` counts toward neither window, except a \`HEAD\` or \`If-None-Match\` request refused \`quota_exceeded\` once the month is spent, which the minute admitted before its answer was known (it may be a \`304\`) and so counts toward it.

## Pagination
History is oldest first. \`from\` and \`to\` (YYYY-MM-DD) are inclusive; \`limit\` is the page size (at most your plan's rows a page; above it, up to 1000, is clamped, not refused; above 1000 is \`400 bad_parameter\`); \`next_cursor\` is the date to pass as \`cursor\` for the next page, and \`null\` on the last one. \`total_row_count\` counts the rows in the \`from\`/\`to\` window across all pages.

## What changed
\`GET /v1/changes\` lists the events of the refreshes: each is \`{published_at, symbol, universe, field, from, to, model, as_of}\`, raised when a refresh moves a level, band, label, zone or status, or an asset's free-tier, catalogue or stale membership. Scores moving within a band are not events. It pages like history; \`next_cursor\` is an event's position in the feed. A daily job asks for yesterday: \`from\` and \`to\` both set to yesterday's date (UTC).

## Webhooks
Instead of asking \`GET /v1/changes\`, have the changes posted to you: \`POST /v1/webhooks\` with \`{"url": "https://..."}\` (and filters: \`fields\`, \`symbols\`, \`universes\`) creates an endpoint and answers its signing secret, once. After each refresh that raised events for it, the endpoint is posted a \`changes.published\` message (the webhook of that name below): the events, as \`GET /v1/changes\` gives them, with the feed positions they cover. Messages are signed as Standard Webhooks signs them (\`webhook-id\`, \`webhook-timestamp\`, \`webhook-signature\`): verify with the \`standardwebhooks\` package and your secret. Answer any 2xx within ${WEBHOOK_TIMEOUT_MS / 1000} s; anything else is retried for about ${retryHours} hours, after which the endpoint is disabled, and \`410\` disables it at once. A plan holds ${Object.entries(
  WEBHOOK_ENDPOINTS,
)
  .map(([plan, n]) => `${n} (${plan})`)
  .join(', ')} endpoints. The webhook routes count toward the minute, never the month, and answer \`Cache-Control: no-store\`.

## Errors
Every error is \`{"error": {"code", "message"}, "disclaimer"}\` with one of these codes:

| status | code |
|---|---|
${errorRows}

A \`401\` carries \`WWW-Authenticate\`; every response carries \`X-Request-Id\`, your own when you send a well-formed one: quote it in a support request.

## Calling from a browser
A page's script on another origin may call the API only from an origin the operator of this gateway allows: ask them to add yours (\`https://dash.example.com\`). From such a page every answer, errors included, lets the script read \`ETag\`, the rate-limit headers, \`Retry-After\` and \`X-Request-Id\`; the browser's preflight (\`OPTIONS\`) is counted toward no quota. No cookie is read: the page sends the key in \`X-API-Key\` itself, so whoever loads the page can see it; give each page a key of its own. An \`If-None-Match\` the script sets is sent as it is and the \`304\` reaches the script. From an origin not allowed the browser refuses the answer (\`fetch\` rejects); health and this document may be read from any page.

## Through a marketplace
A marketplace calls with its own header names, \`x-<name>-key\`, \`x-<name>-host\`, \`x-<name>-proxy-secret\` and \`x-<name>-subscription\` (\`X-RapidAPI-Key\` and so on for RapidAPI), or the neutral \`x-marketplace-*\`. Its subscription (\`BASIC\`, \`PRO\`, \`ULTRA\`) sets the plan, and the marketplace counts its own quotas.

## Freshness
The pages are published three times a day and the API follows each publication. Each reading carries its own \`as_of\` (the page's stamp, or the date of the series' last point); \`stale_models\` names readings more than three days behind the asset's newest page. \`GET /v1/health\` says when the data was built and whether its newest reading is recent (\`status\`: \`ok\` or \`stale\`).

## Versioning
Everything is under \`/v1\`, and v1 only grows: fields may be added to responses, none is removed or changes meaning; a client should ignore fields it does not know. \`api_version\` in this document names the release.`;

/** One example response per operation, by operationId, taken from a build. */
export type Examples = Record<string, { summary: string; value: unknown }>;

/** What the operator says of the deployment (`build --api-info FILE`): the document's contact, licence and terms. */
export const ApiInfo = z
  .object({
    contact: z.object({ name: z.string(), url: z.url(), email: z.email() }).partial().strict(),
    license: z.object({ name: z.string(), url: z.url() }).partial({ url: true }).strict(),
    termsOfService: z.url(),
  })
  .partial()
  .strict();
export type ApiInfo = z.infer<typeof ApiInfo>;

export interface DocumentOptions {
  /** The base URL clients call (`build --public-url`); `/` is the origin the document is served from. */
  servers?: string;
  examples?: Examples;
  info?: ApiInfo;
}

/** The closed document, against which the build validates every file. */
export function openApiDocument(o: DocumentOptions = {}) {
  const doc = {
    openapi: '3.1.0',
    info: {
      title: 'Risk Readings API',
      version: API_VERSION,
      summary: 'Read-only quantitative risk readings for crypto and equity assets, read from published model pages.',
      description: GUIDE,
      ...o.info,
    },
    servers: [{ url: o.servers ?? '/' }],
    tags: [...TAGS],
    security: [{ ApiKey: [] }, { MarketplaceKey: [], MarketplaceHost: [] }],
    paths: {
      '/v1/assets': get('listAssets', "Assets the caller's plan may read", 'assets', {
        parameters: [ifNoneMatch],
        responses: { ...ok('AssetListResponse', "The asset list for the caller's plan"), ...common },
      }),
      '/v1/assets/{symbol}/risk': get('getAssetRisk', "One asset's readings", 'assets', {
        parameters: [symbolParam, ifNoneMatch],
        responses: {
          ...ok('AssetRiskResponse', 'AssetRisk'),
          '400': error('Symbol not a valid shape', ['bad_symbol']),
          '404': error('No asset by that symbol', ['unknown_asset']),
          ...common,
        },
      }),
      '/v1/assets/{symbol}/history': get('getAssetHistory', 'History rows, oldest first, paged by cursor', 'history', {
        parameters: [
          symbolParam,
          limitParam,
          {
            name: 'cursor',
            in: 'query',
            schema: date,
            description: "Exclusive: rows strictly after it. Take it from the previous page's next_cursor.",
          },
          { name: 'from', in: 'query', schema: date, description: 'Inclusive.' },
          { name: 'to', in: 'query', schema: date, description: 'Inclusive; from after to is 400 bad_parameter.' },
          ifNoneMatch,
        ],
        responses: {
          ...ok('HistoryResponse', 'A page of history'),
          '400': error('Malformed parameter', ['bad_symbol', 'bad_parameter']),
          '404': error('No asset by that symbol', ['unknown_asset']),
          ...common,
        },
      }),
      '/v1/changes': get('getChanges', 'Events of the refreshes, oldest first, paged by cursor', 'changes', {
        parameters: [
          limitParam,
          {
            name: 'cursor',
            in: 'query',
            schema: { type: 'string', pattern: '^[0-9]{1,10}$' },
            description: "Exclusive: events strictly after it. Take it from the previous page's next_cursor.",
          },
          { name: 'from', in: 'query', schema: date, description: 'Inclusive: events published on or after this date (UTC).' },
          { name: 'to', in: 'query', schema: date, description: 'Inclusive; from after to is 400 bad_parameter.' },
          ifNoneMatch,
        ],
        responses: {
          ...ok('ChangesResponse', 'A page of events'),
          '400': error('Malformed parameter', ['bad_parameter']),
          ...common,
        },
      }),
      '/v1/bulk/risk': get('getBulkRisk', "Several assets' readings in one envelope (paid plans)", 'market', {
        parameters: [
          {
            name: 'symbols',
            in: 'query',
            required: true,
            schema: { type: 'string', pattern: BULK_PATTERN },
            description: `Comma-separated, 1 to ${BULK_MAX_SYMBOLS}; spaces around a symbol and empty entries are ignored.`,
          },
          ifNoneMatch,
        ],
        responses: {
          ...ok('BulkResponse', 'Covered symbols in assets, the others in missing'),
          '400': error('No symbols or too many', ['bad_parameter', 'too_many_symbols', 'bad_symbol']),
          ...common,
        },
      }),
      '/v1/market/{universe}/summary': get('getUniverseSummary', "A universe's Gravity distribution and barometer", 'market', {
        parameters: [
          {
            name: 'universe',
            in: 'path',
            required: true,
            schema: { type: 'string', enum: [...UNIVERSES] },
            description: `One of ${UNIVERSES.join(', ')}. Basic: crypto only.`,
          },
          ifNoneMatch,
        ],
        responses: {
          ...ok('SummaryResponse', 'Universe summary'),
          '400': error('Universe name not a valid shape', ['bad_universe']),
          '404': error('No universe by that name', ['unknown_universe']),
          ...common,
        },
      }),
      '/v1/signals/dca/{symbol}': get('getDcaSignal', 'The DCA regression state: a band, never a position size', 'signals', {
        parameters: [symbolParam, ifNoneMatch],
        responses: {
          ...ok('DcaSignalResponse', 'DCA signal'),
          '400': error('Symbol not a valid shape', ['bad_symbol']),
          '404': error('No asset by that symbol, or no regression model', ['unknown_asset', 'no_signal']),
          ...common,
        },
      }),
      '/v1/usage': get('getUsage', "The caller's plan, limits and counts", 'account', {
        responses: {
          '200': {
            description: "The caller's standing; never cached",
            headers: { ...requestIdHeader, ...rateHeaders, 'Cache-Control': { schema: { type: 'string', const: 'no-store' } } },
            content: { 'application/json': { schema: ref('UsageResponse') } },
          },
          '401': common['401'],
          '405': common['405'],
          '429': error('Per-minute window exceeded, per credential', ['rate_limited'], {
            'Retry-After': { schema: { type: 'integer' } },
            ...rateHeaders,
          }),
          '503': common['503'],
        },
      }),
      '/v1/webhooks': {
        get: operation('listWebhookEndpoints', 'Your webhook endpoints', 'webhooks', {
          parameters: [marketplaceUser],
          responses: { ...webhookOk('200', 'WebhookEndpointListResponse', 'Your endpoints'), ...webhookErrors('GET, HEAD, POST') },
        }),
        post: operation('createWebhookEndpoint', 'Create a webhook endpoint', 'webhooks', {
          parameters: [marketplaceUser],
          requestBody: jsonBody('WebhookEndpointCreate', WEBHOOK_REQUESTS.create),
          responses: {
            ...webhookOk('201', 'WebhookEndpointCreatedResponse', 'Created, with its signing secret (shown only here)', {
              Location: {
                schema: { type: 'string', pattern: `^/v1/webhooks/ep_[0-9a-f]{24}$` },
                description: 'The new endpoint: /v1/webhooks/{id}.',
              },
            }),
            '400': badBody,
            '403': error(
              "The plan's endpoints are all in use; the message names each plan's",
              ['plan_required'],
              undefined,
              webhookMessages,
            ),
            ...webhookErrors('GET, HEAD, POST'),
          },
        }),
      },
      '/v1/webhooks/{id}': {
        get: operation('getWebhookEndpoint', 'One webhook endpoint', 'webhooks', {
          parameters: [endpointParam, marketplaceUser],
          responses: { ...webhookOk('200', 'WebhookEndpointResponse', 'The endpoint'), ...webhookErrors('GET, HEAD, PATCH, DELETE') },
        }),
        patch: operation('updateWebhookEndpoint', 'Change a webhook endpoint', 'webhooks', {
          parameters: [endpointParam, marketplaceUser],
          requestBody: jsonBody('WebhookEndpointUpdate', WEBHOOK_REQUESTS.update),
          responses: {
            ...webhookOk('200', 'WebhookEndpointResponse', 'The endpoint as changed'),
            '400': badBody,
            ...webhookErrors('GET, HEAD, PATCH, DELETE'),
          },
        }),
        delete: operation('deleteWebhookEndpoint', 'Delete a webhook endpoint', 'webhooks', {
          parameters: [endpointParam, marketplaceUser],
          responses: {
            '204': { description: 'Deleted; no body', headers: webhookHeaders },
            ...webhookErrors('GET, HEAD, PATCH, DELETE'),
          },
        }),
      },
      '/v1/webhooks/{id}/test': {
        post: operation('testWebhookEndpoint', 'Send the endpoint a test message now', 'webhooks', {
          parameters: [endpointParam, marketplaceUser],
          responses: {
            ...webhookOk('200', 'WebhookAttemptResponse', 'The attempt, whatever the receiver answered'),
            ...webhookErrors('POST'),
          },
        }),
      },
      '/v1/webhooks/{id}/rotate-secret': {
        post: operation('rotateWebhookSecret', "Replace the endpoint's signing secret", 'webhooks', {
          parameters: [endpointParam, marketplaceUser],
          responses: {
            ...webhookOk('200', 'WebhookSecretRotatedResponse', 'The endpoint with its new secret (shown only here)'),
            ...webhookErrors('POST'),
          },
        }),
      },
      '/v1/webhooks/{id}/deliveries': {
        get: operation('listWebhookDeliveries', "The endpoint's recent delivery attempts", 'webhooks', {
          parameters: [endpointParam, marketplaceUser],
          responses: {
            ...webhookOk('200', 'WebhookDeliveriesResponse', 'The recent attempts, newest first'),
            ...webhookErrors('GET, HEAD'),
          },
        }),
      },
      '/v1/health': get('getHealth', 'Service health (keyless, not wrapped)', 'service', {
        security: [],
        parameters: [ifNoneMatch],
        responses: {
          '200': { description: 'Health', content: { 'application/json': { schema: ref('Health') } } },
          ...notModified,
          '405': common['405'],
        },
      }),
      '/v1/openapi.json': get('getOpenApi', 'This document (keyless)', 'service', {
        security: [],
        parameters: [ifNoneMatch],
        responses: {
          '200': { description: 'The OpenAPI 3.1 description', content: { 'application/json': { schema: { type: 'object' } } } },
          ...notModified,
          '405': common['405'],
        },
      }),
    },
    webhooks: {
      'changes.published': {
        post: operation('changesPublished', 'What a refresh changed, for this endpoint', 'webhooks', {
          security: [],
          parameters: deliveryHeaders('msg_<endpoint id>_<to_position>'),
          requestBody: { required: true, content: { 'application/json': { schema: ref('WebhookChangesMessage') } } },
          responses: deliveryResponses,
        }),
      },
      'webhook.test': {
        post: operation('webhookTest', 'A test message, sent when asked', 'webhooks', {
          security: [],
          parameters: deliveryHeaders('msg_<endpoint id>_test_<milliseconds>'),
          requestBody: { required: true, content: { 'application/json': { schema: ref('WebhookTestMessage') } } },
          responses: {
            '2XX': deliveryResponses['2XX'],
            default: { description: 'Anything else is reported in the attempt (POST /v1/webhooks/{id}/test answers it); never retried.' },
          },
        }),
      },
    },
    components: {
      schemas: componentSchemas(),
      securitySchemes: {
        ApiKey: {
          type: 'apiKey',
          in: 'header',
          name: 'X-API-Key',
          description: 'A direct key, issued by the operator.',
        },
        MarketplaceKey: {
          type: 'apiKey',
          in: 'header',
          name: 'x-marketplace-key',
          description: 'Marketplace pair, with x-marketplace-host.',
        },
        MarketplaceHost: {
          type: 'apiKey',
          in: 'header',
          name: 'x-marketplace-host',
          description: 'Must equal the configured listing host.',
        },
      },
    },
    'x-plans': Object.fromEntries(
      Object.entries(PLAN_LIMITS).map(([plan, l]) => [
        plan,
        {
          requests_per_month: l.perMonth,
          requests_per_minute: l.perMinute,
          history_rows_per_page: l.historyCap,
          bulk: l.bulk ? BULK_MAX_SYMBOLS : 0,
          webhook_endpoints: WEBHOOK_ENDPOINTS[plan as keyof typeof WEBHOOK_ENDPOINTS],
        },
      ]),
    ),
    'x-decisions': DECISIONS,
  };
  if (o.examples) {
    type Op = {
      operationId: string;
      requestBody?: { content: Record<string, Record<string, unknown>> };
      responses: Record<string, { content?: Record<string, Record<string, unknown>> }>;
    };
    // A route's example is its success's body; a webhook's, the message it posts.
    for (const [items, place] of [
      [doc.paths, (op: Op) => Object.entries(op.responses).find(([s]) => /^2\d\d$/.test(s))?.[1].content?.['application/json']],
      [doc.webhooks, (op: Op) => op.requestBody?.content['application/json']],
    ] as const)
      for (const item of Object.values(items) as unknown as Record<string, Op>[])
        for (const op of Object.values(item)) {
          const example = o.examples[op.operationId];
          const media = place(op);
          if (example && media) media.examples = { [op.operationId]: example };
        }
  }
  return doc;
}

/**
 * The served document: the closed one with every `additionalProperties: false` lifted (a client must not break when
 * v1 adds a field), and every fixed text (the disclaimer, api_version, a rule's wording) given as an example rather
 * than a const, so a change of wording changes no generated client's types. A request body stays closed: it says
 * what the gateway takes, and it refuses a member it does not name.
 */
export function servedDocument(o: DocumentOptions = {}) {
  const closed = openApiDocument(o);
  const open = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(open);
    if (!v || typeof v !== 'object') return v;
    return Object.fromEntries(
      Object.entries(v)
        .filter(([k, x]) => !(k === 'additionalProperties' && x === false))
        .map(([k, x]) =>
          k === 'const' && typeof x === 'string' ? ['examples', [x]] : [k, k === 'examples' || k === 'example' ? x : open(x)],
        ),
    );
  };
  const served = open(closed) as typeof closed;
  for (const id of REQUEST_IDS) served.components.schemas[id] = closed.components.schemas[id]!;
  return served;
}

/** The project's answers to what the spec leaves open (decisions 1-38, docs/decisions.md), carried in the contract itself. */
const DECISIONS = [
  'tier is basic, pro or ultra.',
  '400: bad_symbol, bad_universe, bad_parameter (also bulk with no symbols), too_many_symbols. 401: unauthorized. 403: plan_required. 404: not_found, unknown_asset, unknown_universe, no_signal. 405: method_not_allowed. 429: rate_limited, quota_exceeded. 502: upstream_error. 503: gateway_not_configured.',
  'An error body is exactly { error: { code, message }, disclaimer }.',
  'History from and to are inclusive; from after to is 400 bad_parameter; cursor is exclusive.',
  'Free plan: limit omitted gives the cap (90); a limit above the cap is clamped, not an error; limit is the limit in effect and max_limit the plan cap; a limit not an integer in 1..1000 is 400 bad_parameter on every plan.',
  'Quota exceeded: 429 rate_limited (per minute) or quota_exceeded (calendar month, UTC), with Retry-After and RateLimit-Limit / -Remaining / -Reset headers (sent on successes too); counted per credential.',
  'Gravity bands: accumulation s < 25, mid_cycle 25 <= s < 50, late_cycle 50 <= s < 75, cycle_top s >= 75; only assets with a Gravity reading count.',
  'Summary counts are integers; an empty median, mean or share is null with empty lowest/highest; at most 5 entries each, by score then symbol; a barometer part is null where the universe has none.',
  'Universe summaries: pro and ultra all five; basic crypto only, others 403 plan_required.',
  'Anything but GET, HEAD and OPTIONS included, is 405 method_not_allowed with Allow: GET; a webhook route takes the methods its Allow names.',
  'Symbols match case-insensitively and are answered canonically; a valid unknown symbol is 404 unknown_asset.',
  'Direct keys are issued with `keys add --plan`, printed once, stored as SHA-256 with the plan in {"keys":[{sha256, plan, label}]}.',
  'Marketplace pair: both headers, the configured host; the key in the credential store, or the proxy secret in x-marketplace-proxy-secret with the plan from x-marketplace-subscription (quotas then enforced by the marketplace); anything else 401.',
  'No lifecycle states: the readings are read-only; what each refresh changed is read from GET /v1/changes, or posted to a webhook endpoint a customer creates under /v1/webhooks.',
  'Free-plan asset list: free-tier assets only, asset_count their number, total_asset_count the catalogue.',
  'model_version: one entry per model producing a reading, name without version to version string; null only with no reading.',
  'stale_models lists AssetRisk keys (gravity, twap, sma_composite, phase, dca), sorted.',
  'Data responses: Cache-Control private, max-age=60; Vary every credential header; strong ETag from the manifest; If-None-Match answers 304. Health and this document are public.',
  'Every number is finite; an unprinted value is null; page precision is kept; derived x100 scales are rounded to 2 decimals.',
].map((decision, i) => ({ number: i + 1, decision }));
