/**
 * The webhook part of the document (decision 108) against what the shim does: the request bodies the document
 * describes are exactly those the shim's own reader (`readEndpointBody`, which carries no zod) takes, body for body;
 * the methods of each route and each 405's Allow are the shim's; and the messages the shim builds and signs are what
 * the document's `webhooks` say, headers included.
 */
import { join } from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { beforeAll, describe, expect, it } from 'vitest';
import { feedOf } from '../../../auth-shim/webhooks/feed.js';
import { nextMessage, testMessage } from '../../../auth-shim/webhooks/messages.js';
import { webhookMethod, webhookRoute } from '../../../auth-shim/webhooks/routes.js';
import { newSecret, signedHeaders } from '../../../auth-shim/webhooks/sign.js';
import { Refusal } from '../../../auth-shim/refusal.js';
import { TREE } from '../../../generator/contract/tree.js';
import type { Catalog, ChangeLedger } from '../../../generator/contract/shapes.js';
import {
  readEndpointBody,
  WEBHOOK_DESCRIPTION_MAX,
  WEBHOOK_FIELDS,
  WEBHOOK_FILTER_MAX,
  WEBHOOK_URL_MAX,
} from '../../../generator/contract/webhooks.js';
import { UNIVERSES } from '../../../generator/contract/constants.js';
import { openApiDocument, servedDocument } from '../../../generator/openapi/document.js';
import { compileSchemas } from '../../../generator/output/validate.js';
import { buildSmall, readJson, smallSite, tempDir } from '../../helpers.js';

type Doc = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const URL = 'https://hooks.example.com/risk-readings';
/** The catalogue the shim's reader checks symbols against: every symbol the valid bodies name. */
const MANY = Array.from({ length: WEBHOOK_FILTER_MAX }, (_, i) => `S${i}`);
const CATALOGUE = new Set(['BTC', 'ETH', 'BRK.B', ...MANY]);
const times = <T>(n: number, x: T): T[] => Array.from({ length: n }, () => x);

/**
 * Bodies both kinds take, then bodies one or both refuse. A symbol of the right shape that the catalogue does not
 * hold is the shim's alone to refuse (the document cannot know the catalogue): none is here.
 */
const FILTERS_VALID: Record<string, unknown>[] = [
  {},
  { fields: [], symbols: [], universes: [] },
  { fields: [...WEBHOOK_FIELDS], symbols: ['BTC', 'ETH', 'BRK.B'], universes: [...UNIVERSES] },
  { fields: ['stale_models', 'stale_models'], symbols: ['BTC', 'BTC'] },
  { fields: times(WEBHOOK_FILTER_MAX, 'phase.label'), symbols: MANY, universes: times(WEBHOOK_FILTER_MAX, 'crypto') },
  { description: null },
  { description: '' },
  { description: 'd'.repeat(WEBHOOK_DESCRIPTION_MAX) },
];
const FILTERS_INVALID: Record<string, unknown>[] = [
  { fields: 'phase.label' },
  { fields: ['nope'] },
  { fields: ['stale_models.twap'] },
  { fields: [1] },
  { fields: [null] },
  { fields: times(WEBHOOK_FILTER_MAX + 1, 'phase.label') },
  { symbols: 'BTC' },
  { symbols: ['../etc'] },
  { symbols: ['.hidden'] },
  { symbols: [''] },
  { symbols: ['X'.repeat(21)] },
  { symbols: [{}] },
  { symbols: [...MANY, 'BTC'] },
  { symbols: null },
  { universes: ['europe'] },
  { universes: ['Crypto'] },
  { universes: times(WEBHOOK_FILTER_MAX + 1, 'crypto') },
  { description: 'd'.repeat(WEBHOOK_DESCRIPTION_MAX + 1) },
  { description: 5 },
  { description: false },
  { unknown: 1 },
  { secret: 'whsec_x' },
];
const NOT_OBJECTS = [null, [], [{ url: URL }], 'url', 42, true];
const CASES = {
  create: {
    valid: [
      ...FILTERS_VALID.map((b) => ({ url: URL, ...b })),
      { url: 'h'.repeat(WEBHOOK_URL_MAX) },
      // The address rules (https, a public host) are the gateway's policy, applied after the body is read.
      { url: 'not checked here' },
    ],
    invalid: [
      ...NOT_OBJECTS,
      {},
      { fields: ['phase.label'] },
      { url: '' },
      { url: null },
      { url: 5 },
      { url: [URL] },
      { url: 'h'.repeat(WEBHOOK_URL_MAX + 1) },
      { url: URL, enabled: true },
      ...FILTERS_INVALID.map((b) => ({ url: URL, ...b })),
    ],
  },
  change: {
    valid: [
      ...FILTERS_VALID,
      { url: URL },
      { enabled: false },
      { enabled: true, url: URL, fields: ['dca.band'], description: 'paused no more' },
    ],
    invalid: [...NOT_OBJECTS, { url: '' }, { url: null }, { enabled: 'yes' }, { enabled: null }, { enabled: 0 }, ...FILTERS_INVALID],
  },
} as const;
const SCHEMA = { create: 'WebhookEndpointCreate', change: 'WebhookEndpointUpdate' } as const;

/** Whether the shim's reader takes a body. */
function reads(body: unknown, kind: 'create' | 'change'): boolean {
  try {
    readEndpointBody(body, kind as 'change', CATALOGUE);
    return true;
  } catch {
    return false;
  }
}

describe("the document's request bodies and the shim's reader", () => {
  for (const [form, doc] of [
    ['closed', openApiDocument()],
    ['served', servedDocument()],
  ] as const)
    it(`agree on every body, valid and invalid (the ${form} document)`, () => {
      const schema = compileSchemas(doc);
      for (const kind of ['create', 'change'] as const) {
        const validate = schema(SCHEMA[kind]);
        for (const [expected, bodies] of [
          [true, CASES[kind].valid],
          [false, CASES[kind].invalid],
        ] as const)
          for (const body of bodies) {
            const name = `${kind} ${JSON.stringify(body).slice(0, 120)}`;
            expect([validate(body), reads(body, kind)], name).toEqual([expected, expected]);
          }
      }
    });

  it('count a length as the document does: in characters, an emoji one', () => {
    // JSON Schema's maxLength counts code points; JavaScript's length, UTF-16 units (two for an emoji).
    const validate = compileSchemas(openApiDocument())(SCHEMA.create);
    for (const body of [
      { url: URL, description: '\u{1F4C8}'.repeat(WEBHOOK_DESCRIPTION_MAX) },
      { url: `https://hooks.example.com/${'\u{1F4C8}'.repeat(WEBHOOK_URL_MAX / 2)}` },
    ])
      expect([validate(body), reads(body, 'create')], JSON.stringify(body).slice(0, 60)).toEqual([validate(body), validate(body)]);
  });
});

/** The document's webhook routes and their methods, as [path, methods]. */
const documented = (doc: Doc) =>
  Object.entries(doc.paths as Doc)
    .filter(([p]) => p.startsWith('/v1/webhooks'))
    .map(([p, item]) => [p, Object.keys(item as Doc).map((m) => m.toUpperCase())] as const);

describe("the document's webhook routes and the shim's", () => {
  const doc = openApiDocument() as unknown as Doc;

  it('name the same paths, each with the methods the shim takes (HEAD with GET, as every GET route answers it)', () => {
    const routes = documented(doc);
    expect(routes.map(([p]) => p)).toEqual([
      '/v1/webhooks',
      '/v1/webhooks/{id}',
      '/v1/webhooks/{id}/test',
      '/v1/webhooks/{id}/rotate-secret',
      '/v1/webhooks/{id}/deliveries',
    ]);
    for (const [path, methods] of routes) {
      const route = webhookRoute(path.replace('{id}', 'ep_0123456789abcdef01234567'))!;
      expect(route, path).not.toBeNull();
      const takes = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].filter((m) => {
        try {
          webhookMethod(route, m);
          return true;
        } catch (e) {
          expect(e, `${m} ${path}`).toBeInstanceOf(Refusal);
          return false;
        }
      });
      const withHead = methods.includes('GET') ? [...methods, 'HEAD'] : methods;
      expect([...withHead].sort(), path).toEqual([...takes].sort());
      // Each 405 the document shows names the route's methods in Allow, as the shim's refusal does.
      let refusal: Refusal | undefined;
      try {
        webhookMethod(route, 'PUT');
      } catch (e) {
        refusal = e as Refusal;
      }
      for (const [m, op] of Object.entries(doc.paths[path] as Doc))
        expect(op.responses['405'].headers.Allow.schema.enum, `${m} ${path}`).toEqual([refusal!.headers.Allow]);
    }
  });

  it('give every operation its id, a no-store success and the refusals the shim makes', () => {
    const ids = documented(doc).flatMap(([p]) => Object.values(doc.paths[p] as Doc).map((op) => op.operationId as string));
    expect(ids).toEqual([
      'listWebhookEndpoints',
      'createWebhookEndpoint',
      'getWebhookEndpoint',
      'updateWebhookEndpoint',
      'deleteWebhookEndpoint',
      'testWebhookEndpoint',
      'rotateWebhookSecret',
      'listWebhookDeliveries',
    ]);
    for (const [path] of documented(doc))
      for (const [m, op] of Object.entries(doc.paths[path] as Doc)) {
        const statuses = Object.keys(op.responses);
        const success = statuses.find((s) => s.startsWith('2'))!;
        expect(op.responses[success].headers['Cache-Control'].schema.const, `${m} ${path}`).toBe('no-store');
        const body = m === 'patch' || (m === 'post' && path === '/v1/webhooks');
        expect(statuses.sort(), `${m} ${path}`).toEqual(
          [
            success,
            ...(body ? ['400'] : []),
            '401',
            ...(m === 'post' && path === '/v1/webhooks' ? ['403'] : []),
            '404',
            '405',
            '429',
            '502',
            '503',
          ].sort(),
        );
      }
    expect(Object.keys(doc.paths['/v1/webhooks'].post.responses['201'].headers)).toContain('Location');
  });
});

const root = tempDir('rr-webhooks-doc-');
let ledger: ChangeLedger;
let catalog: Catalog;

beforeAll(async () => {
  const out = join(root, 'public');
  for (const day of [1, 2]) {
    const pages = join(root, `day${day}`);
    await smallSite(pages, day);
    await buildSmall(pages, out, { now: `2026-10-${13 + day}T00:30:00Z`, init: day === 1 });
  }
  ledger = readJson(join(out, 'v1', TREE.changes));
  catalog = readJson(join(out, 'v1', TREE.catalog));
});

describe("the document's webhooks and the messages the shim sends", () => {
  const doc = servedDocument() as unknown as Doc;
  const closed = compileSchemas(openApiDocument());
  const id = 'ep_0123456789abcdef01234567';

  it('a changes.published message the shim cuts from a built feed is what the document describes', () => {
    expect(ledger.events.length).toBeGreaterThan(0);
    const feed = feedOf(ledger, catalog);
    const endpoint = { id, fields: [], symbols: [], universes: [] };
    let sent = 0;
    for (const plan of ['basic', 'ultra'] as const)
      for (let m = nextMessage(feed, endpoint, plan, 0); m.message; m = nextMessage(feed, endpoint, plan, m.through)) {
        expect(closed('WebhookChangesMessage')(JSON.parse(m.message.body)), m.message.body.slice(0, 200)).toBe(true);
        expect(m.message.id).toMatch(new RegExp(`^msg_${id}_[0-9]+$`));
        sent++;
      }
    expect(sent).toBeGreaterThan(1);
  });

  it('a webhook.test message too, and the headers of a delivery are those the document names, of its shapes', () => {
    const now = Date.UTC(2026, 9, 15, 12, 0, 0);
    const body = testMessage(id, now);
    expect(closed('WebhookTestMessage')(JSON.parse(body))).toBe(true);
    const ajv = new Ajv2020.default({ strict: false });
    addFormats.default(ajv);
    for (const [name, msgId] of [
      ['changes.published', `msg_${id}_42`],
      ['webhook.test', `msg_${id}_test_${now}`],
    ] as const) {
      const params = doc.webhooks[name].post.parameters as Doc[];
      // One secret, then two while a rotated one still signs.
      for (const secrets of [
        [{ key: newSecret(), until: null }],
        [
          { key: newSecret(), until: null },
          { key: newSecret(), until: now + 1 },
        ],
      ]) {
        const headers = signedHeaders(msgId, body, secrets, now);
        expect(Object.keys(headers).sort(), name).toEqual(params.map((p) => p.name).sort());
        for (const p of params) expect(ajv.validate(p.schema, headers[p.name]), `${name} ${p.name}: ${headers[p.name]}`).toBe(true);
      }
    }
  });
});
