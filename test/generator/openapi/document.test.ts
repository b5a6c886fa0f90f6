/**
 * The served OpenAPI document (decision 25): valid OpenAPI 3.1 by an independent validator, open response
 * objects, one example per operation taken from the build, `servers` from `--public-url`; the build still
 * validates against the closed form.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { beforeAll, describe, expect, it } from 'vitest';
import { compileSchemas } from '../../../generator/output/validate.js';
import { openApiDocument } from '../../../generator/openapi/document.js';
import { ERROR_STATUS } from '../../../generator/contract/errors.js';
import { CHANGE_FIELDS, UNIVERSES } from '../../../generator/contract/constants.js';
import { REQUEST_IDS } from '../../../generator/contract/shapes.js';
import { buildSmall, readJson, smallSite, tempDir } from '../../helpers.js';

const root = tempDir('rr-openapi-');
type Doc = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
let served: Doc;
/** Every operation of the document's paths, as [path, method, operation]. */
const operations = (doc: Doc): [string, string, Doc][] =>
  Object.entries(doc.paths as Doc).flatMap(([path, item]) =>
    Object.entries(item as Doc).map(([m, op]) => [path, m, op as Doc] as [string, string, Doc]),
  );

const closedCount = (v: unknown): number => {
  if (Array.isArray(v)) return v.reduce((n: number, x) => n + closedCount(x), 0);
  if (!v || typeof v !== 'object') return 0;
  return Object.entries(v).reduce((n, [k, x]) => n + (k === 'additionalProperties' && x === false ? 1 : closedCount(x)), 0);
};

beforeAll(async () => {
  const pages = join(root, 'site');
  await smallSite(pages, 1);
  await buildSmall(pages, join(root, 'public'));
  served = readJson(join(root, 'public', 'v1', 'openapi.json'));
});

describe('the served OpenAPI document', () => {
  it('is valid OpenAPI 3.1 to an independent validator', async () => {
    const result = await new Validator().validate(structuredClone(served));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('forbids no additional property anywhere but in a request body, and fixes no text, while the build validates against the closed form', () => {
    // A request body says what the gateway takes: it refuses a member it does not name.
    const responses = Object.fromEntries(Object.entries(served.components.schemas as Doc).filter(([id]) => !REQUEST_IDS.has(id)));
    expect(closedCount({ ...served, components: { ...served.components, schemas: responses } })).toBe(0);
    for (const id of REQUEST_IDS) expect(served.components.schemas[id].additionalProperties, id).toBe(false);
    expect(closedCount(openApiDocument())).toBeGreaterThan(30);
    expect(JSON.stringify(served)).not.toContain('"const":"');
    // The same schemas otherwise: lifting the closures, and a fixed text given as an example, are the only differences.
    const lift = (v: unknown): unknown =>
      JSON.parse(
        JSON.stringify(v, (k, x) => {
          if (k === 'additionalProperties' && x === false) return undefined;
          if (x && typeof x === 'object' && typeof x.const === 'string') {
            const { const: text, ...rest } = x;
            return { ...rest, examples: [text] };
          }
          return x;
        }),
      );
    const closed = openApiDocument().components;
    const lifted = lift(closed) as Doc;
    for (const id of REQUEST_IDS) lifted.schemas[id] = closed.schemas[id];
    expect(served.components).toEqual(lifted);
    expect(REQUEST_IDS).toEqual(new Set(['WebhookEndpointCreate', 'WebhookEndpointUpdate']));
  });

  it('a response with a field v1 may add still matches the served schema, and fails the closed one', () => {
    const example = served.paths['/v1/assets/{symbol}/risk'].get.responses['200'].content['application/json'].examples.getAssetRisk.value;
    const added = { ...example, data: { ...example.data, added_in_v1_1: 1 } };
    expect(compileSchemas(served)('AssetRiskResponse')(added)).toBe(true);
    expect(compileSchemas(openApiDocument())('AssetRiskResponse')(added)).toBe(false);
  });

  it('every operation carries an example response from the build, valid against the closed schema', () => {
    const closed = compileSchemas(openApiDocument());
    expect(Object.keys(served.paths)).toHaveLength(15);
    let shown = 0;
    for (const [path, method, op] of operations(served)) {
      // A success with a body: a DELETE's 204 has none.
      const media = Object.entries(op.responses as Doc).find(([s]) => /^2\d\d$/.test(s))![1].content?.['application/json'];
      if (method === 'delete') {
        expect(media, path).toBeUndefined();
        continue;
      }
      const examples = Object.values(media.examples ?? {}) as { value: unknown }[];
      expect(examples, `${method} ${path}`).toHaveLength(1);
      const ref = media.schema.$ref as string | undefined;
      if (ref) expect(closed(ref.split('/').pop()!)(examples[0]!.value), `${method} ${path}`).toBe(true);
      shown++;
    }
    expect(shown).toBe(17);
    // And each message posted to a webhook, and each request body the document shows.
    for (const [name, { post }] of Object.entries(served.webhooks as Record<string, { post: Doc }>)) {
      const media = post.requestBody.content['application/json'];
      const examples = Object.values(media.examples) as { value: unknown }[];
      expect(examples, name).toHaveLength(1);
      expect(closed(media.schema.$ref.split('/').pop())(examples[0]!.value), name).toBe(true);
    }
    for (const [, , op] of operations(served).filter(([, , op]) => op.requestBody)) {
      const media = op.requestBody.content['application/json'];
      for (const e of Object.values(media.examples) as { value: unknown }[])
        expect(closed(media.schema.$ref.split('/').pop())(e.value), op.operationId).toBe(true);
    }
    const risk = served.paths['/v1/assets/{symbol}/risk'].get.responses['200'].content['application/json'].examples.getAssetRisk.value;
    expect(risk).toEqual(readJson(join(root, 'public', 'v1', 'assets', risk.data.symbol, 'risk.json')));
    const bulk = served.paths['/v1/bulk/risk'].get.responses['200'].content['application/json'].examples.getBulkRisk.value;
    expect(bulk.data.missing).toEqual(['NOTSERVED']);
    // A caller's standing in the month the tree was built (decision 36).
    const usage = served.paths['/v1/usage'].get.responses['200'].content['application/json'].examples.getUsage.value;
    const built = readJson(join(root, 'public', 'v1', 'health.json')).built_at as string;
    expect(usage.data.month.period).toBe(built.slice(0, 7));
    expect([usage.as_of, usage.model_version]).toEqual([null, null]);
  });

  it('servers is / by default, and build --public-url otherwise', async () => {
    expect(served.servers).toEqual([{ url: '/' }]);
    const out = join(root, 'public-url');
    await buildSmall(join(root, 'site'), out, { publicUrl: 'https://api.example.com' });
    expect(readJson(join(out, 'v1', 'openapi.json')).servers).toEqual([{ url: 'https://api.example.com' }]);
  });

  it('shows each error status with examples of its own codes, valid error bodies of that status', () => {
    const schema = compileSchemas(openApiDocument())('Error');
    let seen = 0;
    for (const [path, , op] of operations(served))
      for (const [status, response] of Object.entries(op.responses as Doc)) {
        if (!/^[45]/.test(status)) continue;
        const examples = Object.values(response.content['application/json'].examples as Doc);
        expect(examples.length, `${path} ${status}`).toBeGreaterThan(0);
        for (const e of examples) {
          expect(ERROR_STATUS[e.value.error.code as keyof typeof ERROR_STATUS], `${path} ${status} ${e.value.error.code}`).toBe(
            Number(status),
          );
          expect(schema(e.value), `${path} ${status}`).toBe(true);
          seen++;
        }
      }
    expect(seen).toBeGreaterThan(100);
  });

  it('refers a reader to nothing outside itself: no "(decision N)" in a description', () => {
    const { ['x-decisions']: _decisions, ...rest } = served;
    expect(JSON.stringify(rest)).not.toMatch(/[Dd]ecision \d/);
  });

  it('constrains the parameters as the gateway does: universes by name, bulk symbols 1 to 25', () => {
    const param = (path: string, name: string) => (served.paths[path].get.parameters as Doc[]).find((p) => p.name === name)!.schema;
    expect(param('/v1/market/{universe}/summary', 'universe').enum).toEqual([...UNIVERSES]);
    const bulk = new RegExp(param('/v1/bulk/risk', 'symbols').pattern);
    const list = (n: number) => Array.from({ length: n }, (_, i) => `S${i}`).join(',');
    expect([list(1), list(25), 'BTC, eth ,SOL', 'BRK.B,BTC-USD', 'BTC,,eth,'].map((v) => bulk.test(v))).toEqual([
      true,
      true,
      true,
      true,
      true,
    ]);
    expect([list(26), '', ',', 'BTC;ETH', 'X'.repeat(21)].map((v) => bulk.test(v))).toEqual([false, false, false, false, false]);
  });

  it('declares If-None-Match on every operation, each answering 304: a typed client sends it as a parameter', () => {
    // A caller's own standing is never cached (no-store, no ETag): nothing to revalidate.
    const usage = (served.paths as Doc)['/v1/usage'].get as Doc;
    expect([usage.parameters, Object.keys(usage.responses)]).toEqual([undefined, ['200', '401', '405', '429', '503']]);
    for (const [path, item] of Object.entries(served.paths as Doc)) {
      // Nor are a caller's webhook endpoints (no-store).
      if (path === '/v1/usage' || path.startsWith('/v1/webhooks')) continue;
      const header = ((item as Doc).get.parameters as Doc[]).filter((p) => p.in === 'header');
      expect(
        header.map((p) => [p.name, p.required, p.schema.type]),
        path,
      ).toEqual([['If-None-Match', false, 'string']]);
      expect(Object.keys((item as Doc).get.responses), path).toContain('304');
    }
  });

  it('types a change event by its field: every tracked field in exactly one shape, named in the discriminator', () => {
    const { schemas } = served.components as Doc;
    const { oneOf, discriminator } = schemas.ChangeEvent as Doc;
    const shapes = (oneOf as Doc[]).map((o) => o.$ref.split('/').pop() as string);
    const fields = shapes.flatMap((name) => (schemas[name].properties.field.enum as string[]).map((f) => [f, name]));
    expect(fields.map(([f]) => f).sort()).toEqual([...CHANGE_FIELDS].sort());
    expect(discriminator.propertyName).toBe('field');
    expect(Object.entries(discriminator.mapping).map(([f, ref]) => [f, (ref as string).split('/').pop()])).toEqual(
      expect.arrayContaining(fields),
    );
    expect(Object.keys(discriminator.mapping)).toHaveLength(CHANGE_FIELDS.length);
    // What each moves: a level, a band, a label or a flag.
    const to = (name: string) => schemas[name].properties.to;
    expect(to('ChangeEventLevel')).toMatchObject({ type: ['integer', 'null'], minimum: 1, maximum: 10 });
    expect(to('ChangeEventMembership')).toMatchObject({ type: 'boolean' });
    expect(to('ChangeEventStale')).toMatchObject({ type: 'boolean' });
    // As the spec says: a reading's as_of may be null, and the DCA multiplier is always null.
    for (const model of ['Gravity', 'Twap', 'SmaComposite', 'Phase', 'Dca'])
      expect(schemas[model].properties.as_of.type).toEqual(['string', 'null']);
    // Typed as a number that is null (decision 107), so that generated clients keep the field.
    expect(schemas.DcaSignal.properties.multiplier).toMatchObject({ type: ['number', 'null'], const: null });
  });

  it('tells a customer how to call it: a guide in its description, and every operation under a described tag', () => {
    const guide = served.info.description as string;
    for (const section of [
      'Getting a key',
      'Plans and limits',
      'Rate limits and retries',
      'Pagination',
      'Errors',
      'Calling from a browser',
      'Through a marketplace',
      'Freshness',
      'Versioning',
      'Webhooks',
    ])
      expect(guide).toContain(`## ${section}`);
    expect(guide).toContain('| basic | 5 | 1,000 | 90 | no |');
    expect(guide).toContain('| 429 | `quota_exceeded` |');
    const tags = new Set((served.tags as { name: string; description: string }[]).map((t) => t.name));
    for (const [, , op] of operations(served)) for (const t of op.tags) expect(tags.has(t)).toBe(true);
    for (const { post } of Object.values(served.webhooks as Doc)) for (const t of post.tags) expect(tags.has(t)).toBe(true);
  });

  it("carries the operator's contact, licence and terms from --api-info, and refuses a file that is not that shape", async () => {
    const info = {
      contact: { name: 'Risk Readings support', email: 'api@example.com' },
      license: { name: 'Proprietary' },
      termsOfService: 'https://example.com/terms',
    };
    const file = join(root, 'api-info.json');
    writeFileSync(file, JSON.stringify(info));
    const out = join(root, 'with-info');
    await buildSmall(join(root, 'site'), out, { apiInfo: file });
    expect(readJson(join(out, 'v1', 'openapi.json')).info).toMatchObject(info);
    writeFileSync(file, JSON.stringify({ contact: { email: 'not an address' } }));
    await expect(buildSmall(join(root, 'site'), join(root, 'bad-info'), { apiInfo: file })).rejects.toThrow(
      new RegExp(`^--api-info ${file}: contact\\.email: `),
    );
  });
});
