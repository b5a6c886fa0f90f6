/**
 * The JSON Schemas of the contract, generated from its zod shapes (contract/shapes.ts) with `z.toJSONSchema`,
 * closed (`additionalProperties: false` on every object): the build validates every file against them. The served
 * document opens them (decision 25). The output is rewritten into the OpenAPI 3.1 idiom clients expect: a
 * nullable value as `type: [t, "null"]`, a nullable reference as `oneOf`, no zod-internal bounds or patterns.
 */
import { z } from 'zod';
import { INTERNAL_IDS, SHAPES } from '../contract/shapes.js';

type Schema = Record<string, unknown>;

const COMPONENTS = '#/components/schemas/';
/** The internal schemas are compiled beside the document, and reach its components through its name. */
const FROM_INTERNAL = `openapi.json${COMPONENTS}`;
/** The bounds zod writes for `.int()` without its own: no constraint a JSON number could break. */
const SAFE_INT = new Set([Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER]);
const isNull = (s: unknown) => (s as Schema | undefined)?.type === 'null' && Object.keys(s as Schema).length === 1;

/** One generated schema node in the document's idiom; children are rewritten first. */
function idiom(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(idiom);
  if (!node || typeof node !== 'object') return node;
  const s: Schema = Object.fromEntries(Object.entries(node).map(([k, v]) => [k, idiom(v)]));
  delete s.$schema;
  delete s.$id;
  // A string format (date, date-time) is the constraint; zod's long equivalent pattern would only repeat it.
  if (typeof s.format === 'string') delete s.pattern;
  if (s.type === 'integer') for (const k of ['minimum', 'maximum']) if (SAFE_INT.has(s[k] as number)) delete s[k];
  // Several integer literals (History.max_limit): an integer enum.
  if (s.type === 'number' && Array.isArray(s.enum) && s.enum.every(Number.isInteger)) s.type = 'integer';
  // Keys of a record are strings by JSON's own rule; only a pattern or an enum on them says something.
  if (s.type === 'object' && s.propertyNames) {
    const { type: _string, ...names } = s.propertyNames as Schema;
    if (Object.keys(names).length) s.propertyNames = names;
    else delete s.propertyNames;
  }
  const options = s.anyOf as Schema[] | undefined;
  if (options?.length === 2 && isNull(options[1])) {
    const { anyOf: _, ...rest } = s;
    const value = options[0]!;
    // A reference or an object with fields stays whole beside null; any other value takes null into its type.
    if ('$ref' in value || 'properties' in value) return { oneOf: [value, options[1]], ...rest };
    const { type, ...constraints } = value;
    return { type: [type, 'null'], ...constraints, ...rest };
  }
  return s;
}

/** Every named shape, public and internal, generated in one pass so that each refers to the others by name. */
const generated = once(() => {
  const { schemas } = z.toJSONSchema(SHAPES, { target: 'draft-2020-12', uri: (id) => `${COMPONENTS}${id}` });
  const components: Record<string, Schema> = {};
  const internal: Record<string, Schema> = {};
  for (const [id, schema] of Object.entries(idiom(schemas) as Record<string, Schema>)) {
    if (!INTERNAL_IDS.has(id)) components[id] = schema;
    else internal[id] = JSON.parse(JSON.stringify(schema).replaceAll(`"$ref":"${COMPONENTS}`, `"$ref":"${FROM_INTERNAL}`));
  }
  return { components, internal };
});

/** `components.schemas` of the closed document. */
export const componentSchemas = () => generated().components;
/** The tree's internal files (ledger, catalogue, manifest), referring to the document's components by name. */
export const internalSchemas = () => generated().internal;

function once<T>(make: () => T): () => T {
  let value: T | undefined;
  return () => (value ??= make());
}
