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
import { z } from 'zod';
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
  method_not_allowed: 'POST is not allowed: the API is read-only; use GET',
  rate_limited: "Quota exceeded: the basic plan's 5 requests per minute; retry in 41 s",
  quota_exceeded: "Quota exceeded: the basic plan's 1000 requests this month (UTC); retry in 432000 s",
  upstream_error: 'The data origin could not be read',
  gateway_not_configured: 'No credential source is configured on this gateway',
};
/** An error response: its description names its codes, and each code has an example body of its own. */
const error = (description: string, codes: ErrorCode[], headers?: object) => ({
  description: `${description} (error.code: ${codes.join(', ')})`,
  headers: { ...requestIdHeader, ...headers },
  content: {
    'application/json': {
      schema: ref('Error'),
      examples: Object.fromEntries(codes.map((code) => [code, { summary: code, value: errorBody(code, EXAMPLE_MESSAGES[code]) }])),
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
const common = {
  ...notModified,
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

What a request costs: an answer with data (\`200\`) counts toward the minute and the month; a \`304\` to \`If-None-Match\` with your copy's \`ETag\`, a \`HEAD\`, and an error answered to an accepted key (a \`400\`, a \`403\`, an unknown asset's \`404\`, a \`502\`) count toward the minute only; a \`429\` counts toward neither window.

## Pagination
History is oldest first. \`from\` and \`to\` (YYYY-MM-DD) are inclusive; \`limit\` is the page size (at most your plan's rows a page; above it is clamped, not refused); \`next_cursor\` is the date to pass as \`cursor\` for the next page, and \`null\` on the last one. \`total_row_count\` counts the rows in the \`from\`/\`to\` window across all pages.

## What changed
\`GET /v1/changes\` lists the events of the refreshes: each is \`{published_at, symbol, universe, field, from, to, model, as_of}\`, raised when a refresh moves a level, band, label, zone or status, or an asset's free-tier, catalogue or stale membership. Scores moving within a band are not events. It pages like history; \`next_cursor\` is an event's position in the feed. A daily job asks for yesterday: \`from\` and \`to\` both set to yesterday's date (UTC).

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
        },
      ]),
    ),
    'x-decisions': DECISIONS,
  };
  if (o.examples) {
    for (const item of Object.values(doc.paths) as unknown as {
      get: { operationId: string; responses: Record<string, { content?: Record<string, Record<string, unknown>> }> };
    }[]) {
      const example = o.examples[item.get.operationId];
      const media = item.get.responses['200']?.content?.['application/json'];
      if (example && media) media.examples = { [item.get.operationId]: example };
    }
  }
  return doc;
}

/**
 * The served document: the closed one with every `additionalProperties: false` lifted (a client must not break when
 * v1 adds a field), and every fixed text (the disclaimer, api_version, a rule's wording) given as an example rather
 * than a const, so a change of wording changes no generated client's types.
 */
export function servedDocument(o: DocumentOptions = {}) {
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
  return open(openApiDocument(o)) as ReturnType<typeof openApiDocument>;
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
  'Anything but GET, HEAD and OPTIONS included, is 405 method_not_allowed with Allow: GET.',
  'Symbols match case-insensitively and are answered canonically; a valid unknown symbol is 404 unknown_asset.',
  'Direct keys are issued with `keys add --plan`, printed once, stored as SHA-256 with the plan in {"keys":[{sha256, plan, label}]}.',
  'Marketplace pair: both headers, the configured host; the key in the credential store, or the proxy secret in x-marketplace-proxy-secret with the plan from x-marketplace-subscription (quotas then enforced by the marketplace); anything else 401.',
  'No lifecycle states or webhooks: the API is read-only and pushes nothing; what each refresh changed is read from GET /v1/changes.',
  'Free-plan asset list: free-tier assets only, asset_count their number, total_asset_count the catalogue.',
  'model_version: one entry per model producing a reading, name without version to version string; null only with no reading.',
  'stale_models lists AssetRisk keys (gravity, twap, sma_composite, phase, dca), sorted.',
  'Data responses: Cache-Control private, max-age=60; Vary every credential header; strong ETag from the manifest; If-None-Match answers 304. Health and this document are public.',
  'Every number is finite; an unprinted value is null; page precision is kept; derived x100 scales are rounded to 2 decimals.',
].map((decision, i) => ({ number: i + 1, decision }));
