/**
 * Reading the site: every page gives its reading once, in the order given; a page whose bytes the previous build
 * read is not parsed again (untouched, or touched and found the same by its hash); a reading the build refuses
 * counts as an unreadable page. (That the compiled build's worker threads read the same is test/generator/build.test.ts's:
 * workers need compiled JavaScript, which the unit tests do not build.)
 */
import { readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { discover, type Discovery } from '../../../generator/site/discover.js';
import { readSite, type ReadOptions } from '../../../generator/site/read-site.js';
import { CATALOG, smallSite, tempDir } from '../../helpers.js';

const site = tempDir('rr-read-site-');
const assets = CATALOG.filter((a) => ['BTC', 'ETH', 'SPY'].includes(a.symbol));
let found: Discovery;

beforeAll(async () => {
  await smallSite(site, 1, '2025-06-01', ['BTC', 'ETH', 'SPY']);
  found = await discover(site, assets);
});

const read = (previous?: Awaited<ReturnType<typeof readSite>>['cache'], options: Partial<ReadOptions> = {}) =>
  readSite(site, found.pages, previous, { wantsArchive: () => false, jobs: 1, ...options });

describe('readSite', () => {
  it('gives every page its reading, in the order of the pages', async () => {
    const first = await read();
    expect(first.results.map((r) => r.file)).toEqual(found.pages.map((p) => p.file));
    for (const [k, r] of first.results.entries()) expect(r).toMatchObject({ kind: found.pages[k]!.kind, symbol: found.pages[k]!.symbol });
    expect([first.parsed, first.reused]).toEqual([found.pages.length, 0]);
  });

  it('parses again only a page whose bytes may differ: one of another size at once, a touched one once hashed', async () => {
    const { cache, results } = await read();
    expect((await read(cache)).parsed).toBe(0);
    const [grown, touched, rewritten] = found.pages.filter((p) => p.symbol === 'BTC').map((p) => p.file);
    const path = (file: string) => join(site, file);
    const touch = (file: string, day: string) => utimesSync(path(file), new Date(), new Date(day));
    // A page of a new size is parsed without being hashed: its bytes cannot be the cached ones.
    writeFileSync(path(grown!), readFileSync(path(grown!), 'utf8').replace('</body>', '<!-- edited --></body>'));
    // Touched pages of the same size are hashed; the first read kept no hash to compare, so each is parsed once.
    touch(touched!, '2030-01-01');
    touch(rewritten!, '2030-01-01');
    const first = await read(cache);
    expect([first.parsed, first.reused]).toEqual([3, found.pages.length - 3]);
    expect(first.cache.pages[grown!]!.hash).toBeUndefined();
    for (const f of [touched!, rewritten!]) expect(first.cache.pages[f]!.hash).toMatch(/^[0-9a-f]{64}$/);
    // Touched again, the same bytes are found unchanged by their hash; other bytes of the same size are parsed.
    touch(touched!, '2030-01-02');
    writeFileSync(path(rewritten!), readFileSync(path(rewritten!), 'utf8').replace('</body>', '</BODY>'));
    const second = await read(first.cache);
    expect([second.parsed, second.reused]).toEqual([1, found.pages.length - 1]);
    expect(second.cache.pages[rewritten!]!.hash).not.toBe(first.cache.pages[rewritten!]!.hash);
    expect(second.results).toEqual(results);
  });

  it('counts a refused reading as an unreadable page', async () => {
    const refused = found.pages.find((p) => p.symbol === 'SPY')!;
    const problem = { field: 'identity', found: 'ETH', message: `${refused.file}: names another asset` };
    const r = await read(undefined, { refuse: (_, ref) => (ref.file === refused.file ? problem : null) });
    expect(r.errors.get(refused.file)).toEqual(problem);
    expect(r.results.map((x) => x.file)).not.toContain(refused.file);
  });
});
