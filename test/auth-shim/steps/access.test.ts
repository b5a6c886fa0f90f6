/** Step access, alone: the catalogue and the plan decide what a caller may read (decisions 9, 11, 15). */
import { describe, expect, it } from 'vitest';
import type { Catalog } from '../../../generator/contract/shapes.js';
import { bulkAllowed, coveredAsset, coveredUniverse, signalAsset } from '../../../auth-shim/steps/access.js';
import { refusalOf } from './refusals.js';

const catalog: Catalog = {
  schema: 1,
  universes: { crypto: ['BTC', 'AERO'], quantum: ['IONQ'] },
  free_tier: ['BTC'],
  index: { BTC: 'BTC', AERO: 'AERO', IONQ: 'IONQ' },
  assets: {
    BTC: { asset_class: 'CRYPTO', universes: ['crypto'], free_tier: true, dca_signal: true },
    AERO: { asset_class: 'CRYPTO', universes: ['crypto'], free_tier: false, dca_signal: false },
    IONQ: { asset_class: 'EQUITY', universes: ['quantum'], free_tier: false, dca_signal: false },
  },
};

describe('step: access', () => {
  it('answers with the canonical symbol, checks shape before the catalogue and the catalogue before the plan', async () => {
    expect(coveredAsset(catalog, 'btc', 'basic')).toBe('BTC');
    expect((await refusalOf(() => coveredAsset(catalog, 'B$', 'basic')))?.code).toBe('bad_symbol');
    expect((await refusalOf(() => coveredAsset(catalog, 'constructor', 'ultra')))?.code).toBe('unknown_asset');
    expect(await refusalOf(() => coveredAsset(catalog, 'aero', 'basic'))).toMatchObject({
      code: 'plan_required',
      message: expect.stringContaining('AERO requires the pro or ultra plan'),
    });
    expect(coveredAsset(catalog, 'aero', 'pro')).toBe('AERO');
  });

  it('a DCA signal only for an asset with the regression model', async () => {
    expect(signalAsset(catalog, 'BTC', 'basic')).toBe('BTC');
    expect((await refusalOf(() => signalAsset(catalog, 'IONQ', 'ultra')))?.code).toBe('no_signal');
  });

  it('universes: all on paid plans, crypto only on basic; bulk on paid plans only', async () => {
    expect(coveredUniverse(catalog, 'CRYPTO', 'basic')).toBe('crypto');
    expect((await refusalOf(() => coveredUniverse(catalog, 'quantum', 'basic')))?.code).toBe('plan_required');
    expect(coveredUniverse(catalog, 'quantum', 'pro')).toBe('quantum');
    expect((await refusalOf(() => coveredUniverse(catalog, 'mars', 'pro')))?.code).toBe('unknown_universe');
    expect((await refusalOf(() => bulkAllowed('basic')))?.code).toBe('plan_required');
    expect(await refusalOf(() => bulkAllowed('pro'))).toBeNull();
  });
});
