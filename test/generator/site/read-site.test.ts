/**
 * Reading the site: each page is reported once as soon as it is read, with whether it differs from what the
 * previous build read (what lets a build that may be idle wait before planning), and a reading the build
 * refuses counts as an unreadable page.
 */
import { readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { discover, type Discovery } from '../../../generator/site/discover.js';
import { readSite, type PageRead, type ReadHooks } from '../../../generator/site/read-site.js';
import { CATALOG, smallSite, tempDir } from '../../helpers.js';

const site = tempDir('rr-read-site-');
const assets = CATALOG.filter((a) => ['BTC', 'SPY'].includes(a.symbol));
let found: Discovery;

beforeAll(async () => {
  await smallSite(site, 1, '2025-06-01', ['BTC', 'SPY']);
  found = await discover(site, assets);
});

/** readSite with its reports collected. */
async function read(previous?: Awaited<ReturnType<typeof readSite>>['cache'], hooks: ReadHooks = {}) {
  const reads: PageRead[] = [];
  const r = await readSite(site, found.pages, previous, () => false, 1, { ...hooks, onRead: (x) => reads.push(x) });
  return { ...r, reads, changed: reads.filter((x) => x.changed).map((x) => x.ref.file) };
}

describe('readSite', () => {
  it('reports every page once, each changed on a first read, with its reading', async () => {
    const first = await read();
    expect(first.reads.map((x) => x.ref.file).sort()).toEqual(found.pages.map((p) => p.file).sort());
    expect(first.changed).toHaveLength(found.pages.length);
    for (const x of first.reads) expect(x.result).toMatchObject({ file: x.ref.file, kind: x.ref.kind, symbol: x.ref.symbol });
  });

  it('reports a page as changed only when its bytes differ from the previous read, touched or not', async () => {
    const { cache } = await read();
    expect((await read(cache)).changed).toEqual([]);
    const [touched, edited] = found.pages.filter((p) => p.symbol === 'BTC').map((p) => join(site, p.file));
    utimesSync(touched!, new Date(), new Date('2030-01-01'));
    writeFileSync(edited!, readFileSync(edited!, 'utf8').replace('</body>', '<!-- edited --></body>'));
    const again = await read(cache);
    expect(again.changed).toEqual([edited!.slice(site.length + 1)]);
    expect(again.parsed).toBe(1);
  });

  it('counts a refused reading as an unreadable page', async () => {
    const refused = found.pages.find((p) => p.symbol === 'SPY')!;
    const problem = { field: 'identity', found: 'ETH', message: `${refused.file}: names another asset` };
    const r = await read(undefined, { refuse: (_, ref) => (ref.file === refused.file ? problem : null) });
    expect(r.errors.get(refused.file)).toEqual(problem);
    expect(r.reads.find((x) => x.ref.file === refused.file)).toEqual({ ref: refused, changed: true });
  });
});
