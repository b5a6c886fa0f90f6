/** `diff` on trees built from the fixture site: the changes reported are the ones the synthesizer made. */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { CATALOG, ROOT, SMALL, buildSmall, readJson, smallSite, tempDir } from '../helpers.js';
import { pageFiles, renderAssetPage, siteContext } from '../../fixtures/synth/site.js';
import { ranking } from '../../fixtures/synth/pages/market.js';
import { compareTrees, exitStatus, type Change } from '../../generator/diff/compare.js';
import { diskLoader } from '../../generator/diff/loader.js';
import { sha256 } from '../../generator/output/manifest.js';
import { sig8 } from '../../generator/site/numbers.js';

const root = tempDir('rr-diff-');
const crypto = CATALOG.filter((a) => a.asset_class === 'CRYPTO');
// Day 3 swaps ranks 10 and 11: the site needs the eleven largest for the free tier (ten of them) to move.
const day3 = ranking(crypto, 3, 'risk-readings');
const tenth = day3[9]!.asset.symbol;
const eleventh = day3[10]!.asset.symbol;
const SYMBOLS = [...new Set([...SMALL, ...day3.slice(0, 11).map((r) => r.asset.symbol)])];
const dir = (n: string) => join(root, n);
const diff = async (a: string, b: string, only?: string) => compareTrees(diskLoader(dir(a)), diskLoader(dir(b)), only);
const find = (cs: Change[], subject: string, field: string) => cs.find((c) => c.subject === subject && c.field === field);

/**
 * A fresh copy of built tree `from` as `to`: the `v1` link copied as the link it is, so the copy's `v1` points
 * into the copy. Whatever `to` held goes first: from Node 22.23 on, `cpSync` refuses to copy a link onto one that
 * exists (EEXIST), and a test must not inherit another test's edits whatever order they run in.
 */
function copyTree(from: string, to: string) {
  rmSync(dir(to), { recursive: true, force: true });
  cpSync(dir(from), dir(to), { recursive: true, verbatimSymlinks: true });
}

/** Edit one JSON file of a built tree and keep its manifest entry true, as a rebuild would. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function rewrite(tree: string, path: string, edit: (doc: any) => void) {
  const file = join(dir(tree), 'v1', path);
  const doc = JSON.parse(readFileSync(file, 'utf8'));
  edit(doc);
  const text = JSON.stringify(doc, null, 2) + '\n';
  writeFileSync(file, text);
  const mfile = join(dir(tree), 'v1', '_manifest.json');
  const m = JSON.parse(readFileSync(mfile, 'utf8'));
  m.files[path] = { size: Buffer.byteLength(text), sha256: sha256(text) };
  writeFileSync(mfile, JSON.stringify(m));
}

/** B with one BTC history row removed and another changed, made once whichever test asks first. */
let lossy: { vanished: string; changed: string } | undefined;
function lossyTree(): { vanished: string; changed: string } {
  if (lossy) return lossy;
  copyTree('B', 'F');
  const made = { vanished: '', changed: '' };
  rewrite('F', 'assets/BTC/history/full.json', (doc) => {
    made.vanished = doc.data.rows.splice(5, 1)[0].date;
    made.changed = doc.data.rows[10].date;
    doc.data.rows[10].price = 1;
  });
  return (lossy = made);
}

beforeAll(async () => {
  for (const d of [2, 3]) await smallSite(dir(`site${d}`), d, '2025-06-01', SYMBOLS);
  await buildSmall(dir('site2'), dir('A'), { now: '2026-10-15T00:30:00Z' });
  await buildSmall(dir('site3'), dir('B'), { previous: dir('A'), now: '2026-10-16T00:30:00Z' });
});

describe('diff between two publication days', () => {
  it('reports each price move the synthesizer made, old → new with the change', async () => {
    const r = await diff('A', 'B');
    const two = siteContext({ day: 2, historyStart: '2025-06-01' });
    const three = siteContext({ day: 3, historyStart: '2025-06-01' });
    for (const s of ['BTC', 'ETH', 'SPY']) {
      const a = CATALOG.find((x) => x.symbol === s)!;
      const [p2, p3] = [sig8(two.path(a).prices.at(-1)!), sig8(three.path(a).prices.at(-1)!)];
      expect(find(r.changes, s, 'price.value')).toMatchObject({
        group: 'readings',
        old: p2,
        new: p3,
        delta: Math.round((p3 - p2) * 1e8) / 1e8,
      });
    }
    expect(find(r.changes, 'BTC', 'as_of')).toMatchObject({ old: '2026-10-14T23:58:00Z', new: '2026-10-15T23:58:00Z' });
    const g = find(r.changes, 'BTC', 'gravity.score');
    const [ga, gb] = [
      readJson(join(dir('A'), 'v1/assets/BTC/risk.json')).data.gravity.score,
      readJson(join(dir('B'), 'v1/assets/BTC/risk.json')).data.gravity.score,
    ];
    if (ga !== gb) expect(g).toMatchObject({ old: ga, new: gb });
    else expect(g).toBeUndefined();
  });

  it('reports the free tier moving when ranks 10 and 11 trade places', async () => {
    const r = await diff('A', 'B');
    expect(r.changes.filter((c) => c.group === 'catalogue' && c.field === 'free_tier').map((c) => [c.subject, c.new])).toEqual(
      expect.arrayContaining([
        [tenth, true],
        [eleventh, false],
      ]),
    ); // ranking() is already day 3's: the new tenth joined
  });

  it('counts one history row added per asset, flags none, and moves summaries; exit status 1', async () => {
    const r = await diff('A', 'B');
    const added = r.changes.filter((c) => c.group === 'history');
    expect(added.map((c) => c.subject).sort()).toEqual([...SYMBOLS].sort());
    expect(added.every((c) => c.field === 'rows added' && c.delta === 1 && c.level === 'info')).toBe(true);
    expect(r.changes.some((c) => c.group === 'summaries')).toBe(true);
    expect(exitStatus(r)).toBe(1);
  });

  it('exit status 0 for identical trees', async () => {
    const r = await diff('A', 'A');
    expect([r.changes, exitStatus(r)]).toEqual([[], 0]);
  });

  it('--asset keeps only that asset, and counts only its files', async () => {
    const r = await diff('A', 'B', 'SPY');
    expect(r.changes.length).toBeGreaterThan(0);
    expect(r.changes.every((c) => c.subject === 'SPY')).toBe(true);
    const own = Object.keys(readJson(join(dir('B'), 'v1', '_manifest.json')).files).filter((p) => p.startsWith('assets/SPY/'));
    const { changed, added, removed, unchanged } = r.files;
    expect([changed + added + removed + unchanged, changed]).toEqual([own.length, expect.any(Number)]);
    expect(changed).toBeGreaterThan(0);
  });
});

describe('every kind of change', () => {
  it('a reading that became null and one that came back', async () => {
    // A page that vanishes fails the build (the previous build read it); a model the catalogue drops reads null.
    const cat = readJson(join(dir('site3'), 'catalog.json'));
    const eth = cat.assets.find((a: { symbol: string }) => a.symbol === 'ETH');
    eth.models = eth.models.filter((m: string) => m !== 'dca');
    writeFileSync(join(root, 'catalog-no-eth-dca.json'), JSON.stringify(cat));
    await buildSmall(dir('site3'), dir('C'), {
      previous: dir('A'),
      catalog: join(root, 'catalog-no-eth-dca.json'),
      now: '2026-10-16T00:30:00Z',
    });
    expect(find((await diff('A', 'C')).changes, 'ETH', 'dca')).toMatchObject({ old: 'a reading', new: null });
    expect(find((await diff('C', 'B')).changes, 'ETH', 'dca')).toMatchObject({ old: null, new: 'a reading' });
  });

  it('a model entering and leaving stale_models', async () => {
    cpSync(dir('site3'), dir('site3-stale'), { recursive: true });
    const aero = CATALOG.find((a) => a.symbol === 'AERO')!;
    const old = siteContext({ day: -1, historyStart: '2025-06-01' });
    const file = pageFiles(aero).crypto_sma_20w!;
    writeFileSync(
      join(dir('site3-stale'), file),
      renderAssetPage('crypto_sma_20w', { asset: aero, path: old.path(aero), day: old.day, siblings: [] }, file),
    );
    await buildSmall(dir('site3-stale'), dir('D'), { previous: dir('A'), now: '2026-10-16T00:30:00Z' });
    expect(find((await diff('B', 'D')).changes, 'AERO', 'stale_models')).toMatchObject({ new: 'sma_composite became stale' });
    expect(find((await diff('D', 'B')).changes, 'AERO', 'stale_models')).toMatchObject({ old: 'sma_composite was stale', new: null });
  });

  it('catalogue: an asset added, one removed (its history vanishing is an alarm), universe membership', async () => {
    const cat = readJson(join(dir('site3'), 'catalog.json'));
    cat.assets = cat.assets.filter((a: { symbol: string }) => a.symbol !== 'ADA');
    cat.assets.find((a: { symbol: string }) => a.symbol === 'IONQ').universes = ['quantum', 'ai_infrastructure'];
    writeFileSync(join(root, 'catalog-e.json'), JSON.stringify(cat));
    await buildSmall(dir('site3'), dir('E'), { catalog: join(root, 'catalog-e.json'), now: '2026-10-16T00:30:00Z' });
    const r = await diff('B', 'E');
    expect(find(r.changes, 'ADA', 'asset')).toMatchObject({ group: 'catalogue', new: 'removed' });
    expect(find(r.changes, 'IONQ', 'universes')).toMatchObject({ old: ['quantum'], new: ['quantum', 'ai_infrastructure'] });
    expect(r.changes.filter((c) => c.subject === 'ADA' && c.level === 'alarm').length).toBeGreaterThan(0);
    expect(find((await diff('E', 'B')).changes, 'ADA', 'asset')).toMatchObject({ new: 'added' });
  });

  it('a published history row changed or vanished: loud, exit status 3', async () => {
    const { vanished, changed } = lossyTree();
    const r = await diff('B', 'F');
    expect(find(r.changes, 'BTC', `row ${vanished}`)).toMatchObject({ level: 'alarm', new: null });
    expect(find(r.changes, 'BTC', `row ${changed}`)).toMatchObject({ level: 'alarm' });
    expect(exitStatus(r)).toBe(3);
  });

  it("the served document's examples follow the readings: under the same contract hash, no contract change", async () => {
    copyTree('B', 'H');
    rewrite('H', 'openapi.json', (doc) => (doc.servers = [{ url: 'https://api.example.com' }]));
    const r = await diff('B', 'H');
    expect(r.changes.filter((c) => c.group === 'contract')).toEqual([]);
  });

  it("a contract change: model_version, the OpenAPI document's schemas, api_version", async () => {
    copyTree('B', 'G');
    rewrite('G', 'assets/SPY/risk.json', (doc) => (doc.model_version.twap_gravity_equity = '2'));
    rewrite('G', 'openapi.json', (doc) => (doc.info.description += ' Now with more.'));
    rewrite('G', 'health.json', (doc) => (doc.api_version = '1.1.0'));
    // What a build under changed schemas records: another contract hash.
    const mfile = join(dir('G'), 'v1', '_manifest.json');
    writeFileSync(mfile, JSON.stringify({ ...JSON.parse(readFileSync(mfile, 'utf8')), contract: '0'.repeat(64) }));
    const r = await diff('B', 'G');
    const contract = r.changes.filter((c) => c.group === 'contract');
    expect(contract.map((c) => [c.subject, c.field])).toEqual(
      expect.arrayContaining([
        ['risk.json', 'model_version.twap_gravity_equity'],
        ['openapi.json', 'document'],
        ['health.json', 'api_version'],
      ]),
    );
    expect(contract.every((c) => c.level === 'contract')).toBe(true);
    expect(exitStatus(r)).toBe(1);
  });
});

describe('risk-readings diff (compiled)', () => {
  const run = (...args: string[]) =>
    spawnSync(process.execPath, [join(ROOT, 'bin', 'risk-readings.js'), 'diff', ...args], {
      encoding: 'utf8',
      env: { ...process.env, NO_COLOR: '1' },
    });

  it('prints a summary line first, groups, and no colour off a TTY; --json is the same as data', () => {
    const h = run(dir('A'), dir('B'));
    expect(h.status).toBe(1);
    expect(h.stdout.split('\n')[0]).toMatch(/^\d+ changes \(.*\) in \d+ files · contract unchanged · no published row changed$/);
    expect(h.stdout).toMatch(/\nreadings \(\d+\)\n/);
    expect(h.stdout).not.toContain('\x1b[');
    const j = run(dir('A'), dir('B'), '--json');
    const data = JSON.parse(j.stdout);
    expect(data.status).toBe(1);
    expect(Object.keys(data.groups)).toEqual(['contract', 'history', 'catalogue', 'readings', 'summaries']);
    expect(data.summary).toBe(h.stdout.split('\n')[0]);
    // The tracked changes, as B's change feed published them, and a line for each in the human form.
    const feed = readJson(join(dir('B'), 'v1', 'changes', 'ledger.json')).events;
    expect(data.events).toEqual(feed);
    expect(h.stdout).toContain(`\nevents (${feed.length}): what GET /v1/changes lists for this refresh\n`);
    expect(h.stdout).toContain(`  ${tenth}  free_tier  false → true\n`);
    expect(h.stdout).toContain(`  ${eleventh}  free_tier  true → false\n`);
  });

  it('exit 2 when a tree cannot be read, 3 on a lost row', () => {
    const absent = run(dir('A'), join(root, 'nothing'));
    expect([absent.status, absent.stderr]).toEqual([2, `risk-readings: NEW ${join(root, 'nothing')}: no such folder\n`]);
    mkdirSync(join(root, 'not-a-tree'), { recursive: true });
    const bad = run(dir('A'), join(root, 'not-a-tree'));
    expect([bad.status, bad.stderr]).toEqual([
      2,
      `risk-readings: NEW ${join(root, 'not-a-tree')}: holds no v1/, no built tree; pass the folder a build's --out wrote v1/ into\n`,
    ]);
    // A tree's own folder given for the folder holding it, in either place: named, with the folder to pass.
    const own = run(join(dir('A'), 'v1'), dir('B'));
    expect([own.status, own.stderr]).toEqual([
      2,
      `risk-readings: OLD ${join(dir('A'), 'v1')}: a tree's own folder (it holds _manifest.json), not the folder holding v1/; pass ${dir('A')}\n`,
    ]);
    // A file of another shape (a hand edit the manifest was made to agree with): named, never a TypeError.
    copyTree('B', 'I');
    rewrite('I', 'assets/ETH/risk.json', (doc) => delete doc.data.market_context);
    const odd = run(dir('A'), dir('I'));
    const listing = join(dir('I'), 'v1', '_manifest.json');
    const m = readJson(listing);
    writeFileSync(listing, JSON.stringify({ ...m, files: [] }));
    expect(run(dir('A'), dir('I')).stderr).toMatch(/v1\/_manifest\.json is not a manifest \(expected built_at and files by path\)/);
    writeFileSync(listing, JSON.stringify(m));
    expect(odd.status).toBe(2);
    expect(odd.stderr).toMatch(/^risk-readings diff: assets\/ETH\/risk\.json: not the shape of the file this version builds/);
    // A file the manifest lists, gone (a damaged copy): trouble naming it, not an asset leaving the catalogue.
    copyTree('B', 'J');
    rmSync(join(dir('J'), 'v1', 'assets', 'ETH', 'risk.json'));
    const damaged = run(dir('A'), dir('J'));
    expect([damaged.status, damaged.stdout]).toEqual([2, '']);
    expect(damaged.stderr).toBe(
      `risk-readings diff: ${join(dir('J'), 'v1', 'assets', 'ETH', 'risk.json')}: listed in _manifest.json but absent (risk-readings check --public ${dir('J')} names all it finds)\n`,
    );
    // An empty --asset is refused, not read as every asset.
    const empty = run(dir('A'), dir('B'), '--asset', ' ');
    expect([empty.status, empty.stderr]).toEqual([
      2,
      expect.stringMatching(/--asset takes an asset symbol such as BTC, not an empty value/),
    ]);
    lossyTree();
    expect(run(dir('B'), dir('F')).status).toBe(3);
    expect(run(dir('B'), dir('F')).stdout).toMatch(/VANISHED/);
  });
});
