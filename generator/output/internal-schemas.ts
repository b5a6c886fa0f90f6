/** Schemas of the tree's internal files (not API responses): the history ledger, the shim's catalogue, the manifest. */
const ref = (name: string) => ({ $ref: `openapi.json#/components/schemas/${name}` });
const DIGEST = { size: { type: 'integer', minimum: 0 }, sha256: { type: 'string', pattern: '^[0-9a-f]{64}$' } };
const digestSchema = { type: 'object', additionalProperties: false, required: ['size', 'sha256'], properties: DIGEST };

export const INTERNAL_SCHEMAS: Record<string, object> = {
  HistoryLedger: {
    type: 'object',
    additionalProperties: false,
    required: ['as_of', 'model_version', 'disclaimer', 'data'],
    properties: {
      as_of: { type: ['string', 'null'] },
      model_version: ref('ModelVersion'),
      disclaimer: ref('Disclaimer'),
      data: {
        type: 'object',
        additionalProperties: false,
        required: ['symbol', 'cadence', 'first_published', 'total_row_count', 'rows'],
        properties: {
          symbol: { type: 'string' },
          cadence: { type: 'string' },
          first_published: { type: ['string', 'null'], format: 'date' },
          total_row_count: { type: 'integer', minimum: 0 },
          rows: { type: 'array', items: ref('HistoryRow') },
        },
      },
    },
  },
  Catalog: {
    type: 'object',
    additionalProperties: false,
    required: ['schema', 'universes', 'free_tier', 'index', 'assets'],
    properties: {
      schema: { const: 1 },
      universes: { type: 'object', additionalProperties: { type: 'array', items: { type: 'string' } } },
      free_tier: { type: 'array', items: { type: 'string' } },
      index: { type: 'object', additionalProperties: { type: 'string' }, description: 'Upper-cased symbol to canonical symbol.' },
      assets: {
        type: 'object',
        additionalProperties: {
          type: 'object',
          additionalProperties: false,
          required: ['asset_class', 'universes', 'free_tier', 'dca_signal'],
          properties: {
            asset_class: { enum: ['CRYPTO', 'EQUITY'] },
            universes: { type: 'array', items: ref('Universe') },
            free_tier: { type: 'boolean' },
            dca_signal: { type: 'boolean' },
          },
        },
      },
    },
  },
  Manifest: {
    type: 'object',
    additionalProperties: false,
    required: ['schema', 'built_at', 'files'],
    properties: {
      schema: { const: 1 },
      built_at: { type: 'string', format: 'date-time' },
      pages: { type: 'array', items: { type: 'string' }, description: 'The source pages this tree answers for.' },
      contract: {
        type: 'string',
        pattern: '^[0-9a-f]{64}$',
        description: 'SHA-256 of the closed schemas the files were validated against.',
      },
      files: {
        type: 'object',
        additionalProperties: {
          type: 'object',
          additionalProperties: false,
          required: ['size', 'sha256'],
          properties: {
            ...DIGEST,
            encodings: {
              type: 'object',
              additionalProperties: false,
              properties: { br: digestSchema, gzip: digestSchema },
              description: 'Compressed variants beside the file (name + .br, .gz).',
            },
          },
        },
      },
    },
  },
  OpenApi: {
    type: 'object',
    required: ['openapi', 'info', 'paths', 'components'],
    properties: {
      openapi: { const: '3.1.0' },
      info: { type: 'object', required: ['version'], properties: { version: { const: '1.0.0' } } },
    },
  },
};
