/**
 * The validators the compiled build keeps as standalone code: they refuse what ajv's own compile refuses, with the
 * same words, and they are used only under their own key (the contract, ajv and its options).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openApiDocument } from '../../../generator/openapi/document.js';
import { compileSchemas } from '../../../generator/output/validate.js';
import { ROOT } from '../../helpers.js';

/** The compiled modules: only compiled JavaScript keeps validators (never the source tree). */
const dist = async () => ({
  validate: (await import(
    join(ROOT, 'dist', 'generator', 'output', 'validate.js')
  )) as typeof import('../../../generator/output/validate.js'),
  cache: (await import(
    join(ROOT, 'dist', 'generator', 'output', 'validator-cache.js')
  )) as typeof import('../../../generator/output/validator-cache.js'),
  document: (await import(
    join(ROOT, 'dist', 'generator', 'openapi', 'document.js')
  )) as typeof import('../../../generator/openapi/document.js'),
});

const risk = {
  as_of: '2026-10-13T23:58:00Z',
  model_version: {},
  disclaimer: 'x',
  data: { symbol: 'BTC', asset_class: 'CRYPTO', price: { value: 'not a number' } },
};

describe('the kept validators', () => {
  it('are written beside the compiled build and refuse what a compile in memory refuses, in the same words', async () => {
    const { validate, document } = await dist();
    const doc = document.openApiDocument();
    // The first asks may compile and keep them; by the second the kept file is what a build loads.
    validate.compileSchemas(doc, { cache: true })('AssetRiskResponse');
    const kept = validate.compileSchemas(doc, { cache: true });
    expect(existsSync(join(ROOT, 'dist', 'generator', 'output', 'contract-validators.cjs'))).toBe(true);
    const inMemory = compileSchemas(openApiDocument());
    for (const name of ['AssetRiskResponse', 'HistoryResponse', 'x-internal-HistoryLedger', 'x-internal-Manifest']) {
      const a = kept(name);
      const b = inMemory(name);
      expect(a(risk), name).toBe(b(risk));
      expect(a.errors?.[0], name).toEqual(b.errors?.[0]);
    }
  });

  it('are used only under their own key', async () => {
    const { validate, cache, document } = await dist();
    validate.compileSchemas(document.openApiDocument(), { cache: true })('Health');
    expect(cache.loadValidators('another contract', ['Health'])).toBeNull();
  });

  it('are never kept by the sources (the test runner)', () => {
    expect(existsSync(join(ROOT, 'generator', 'output', 'contract-validators.cjs'))).toBe(false);
  });
});
