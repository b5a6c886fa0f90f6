/**
 * Discovery of a pages folder: each catalogue page found by its file name, and a link whose target lies outside the
 * folder never read (listed instead), so a build reads only what the folder holds.
 */
import { mkdirSync, renameSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { discover } from '../../../generator/site/discover.js';
import { CATALOG, smallSite, tempDir } from '../../helpers.js';

const root = tempDir('rr-discover-');
const site = join(root, 'site');
const elsewhere = join(root, 'elsewhere');
const assets = CATALOG.filter((a) => ['BTC', 'ETH', 'SPY'].includes(a.symbol));
const GRAVITY = 'BTC_Price_TWAP_Gravity_Analysis.html';
const SPY = 'SPY_Equities_TWAP.html';

beforeAll(async () => {
  await smallSite(site, 1, '2025-06-01', ['BTC', 'ETH', 'SPY']);
  mkdirSync(elsewhere);
  // BTC's gravity page lives outside the folder behind a link; SPY's behind a link to a file inside it.
  renameSync(join(site, GRAVITY), join(elsewhere, GRAVITY));
  symlinkSync(join(elsewhere, GRAVITY), join(site, GRAVITY));
  renameSync(join(site, SPY), join(site, 'spy-original.html'));
  symlinkSync(join(site, 'spy-original.html'), join(site, SPY));
  symlinkSync(join(root, 'nowhere.html'), join(site, 'ETH_Price_TWAP_Gravity_Analysis.html.broken'));
});

describe('discover', () => {
  it('follows a link within the folder and lists, without reading, one that leads outside it', async () => {
    const found = await discover(site, assets);
    expect(found.pages.map((p) => p.file)).toContain(SPY);
    expect(found.pages.map((p) => p.file)).not.toContain(GRAVITY);
    expect(found.outside).toEqual([{ file: GRAVITY, target: join(elsewhere, GRAVITY) }]);
    expect(found.missing).toContainEqual(expect.objectContaining({ symbol: 'BTC', file: GRAVITY }));
  });
});
