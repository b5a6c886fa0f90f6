/** The build end to end on a small synthetic site: three days of history, determinism, and the failure guarantees. */
import {
  cpSync,
  existsSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildSmall, CATALOG, readJson, ROOT, SMALL, smallSite, tempDir, treeHashes } from '../helpers.js';
import { discover } from '../../generator/site/discover.js';
import { readSite } from '../../generator/site/read-site.js';
import { PUBLICATIONS } from '../../fixtures/synth/markup.js';
import { writeSite } from '../../fixtures/synth/site.js';
import { BuildError } from '../../generator/build.js';
import { isLedger } from '../../generator/contract/tree.js';
import { checkTree } from '../../generator/check.js';
import { sha256 } from '../../generator/output/manifest.js';

const root = tempDir('rr-build-');
const day = (n: number) => join(root, `site-day${n}`);
/** Trees built once and only read: day 1 alone, and days 1 to 3 in one ledger. A test that changes one copies it. */
const day1 = join(root, 'day1-tree');
const day3 = join(root, 'day3-tree');
const ledger = (tree: string, symbol: string) =>
  readJson(join(tree, 'v1', 'assets', symbol, 'history', 'full.json')).data.rows as { date: string; basis: string }[];
/** A copy of a built tree (its v1 link relative, so the copy stands alone). */
const copyOf = (tree: string, name: string) => {
  const to = join(root, name);
  cpSync(tree, to, { recursive: true, verbatimSymlinks: true });
  return to;
};

/** Day 2's pages copied to `name`, with the card labelled `label` on page `file` printing `value` instead. */
function withCard(name: string, file: string, label: string, value: string): string {
  const pages = join(root, name);
  cpSync(day(2), pages, { recursive: true });
  const page = join(pages, file);
  const card = new RegExp(`(<p class="card-lbl">${label.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}</p>\\s*<p class="card-val"[^>]*>)[^<]*`);
  const html = readFileSync(page, 'utf8');
  if (!card.test(html)) throw new Error(`${file} has no card "${label}"`);
  writeFileSync(page, html.replace(card, `$1${value}`));
  return pages;
}

beforeAll(async () => {
  for (const n of [1, 2, 3]) await smallSite(day(n), n);
  await buildSmall(day(1), day1);
  copyOf(day1, 'day3-tree');
  await buildSmall(day(2), day3, { now: '2026-10-15T00:30:00Z' });
  await buildSmall(day(3), day3, { now: '2026-10-16T00:30:00Z' });
});

describe('build over three publication days', () => {
  it('a page behind a link leading outside --pages is not read: the build warns and reads it as missing', async () => {
    const pages = join(root, 'linked-out');
    cpSync(day(1), pages, { recursive: true });
    const page = 'BTC_Price_TWAP_Gravity_Analysis.html';
    const target = join(root, `outside-${page}`);
    renameSync(join(pages, page), target);
    symlinkSync(target, join(pages, page));
    const report = await buildSmall(pages, join(root, 'linked-out-tree'));
    expect(report.warnings).toContain(`${page}: a link to ${target}, outside --pages; not read`);
    expect(report.warnings).toContainEqual(expect.stringMatching(/^BTC: BTC_Price_TWAP_Gravity_Analysis\.html is missing/));
  });

  it('a first build of a site without the ranking page publishes with no free tier and says why', async () => {
    const pages = join(root, 'no-ranking');
    cpSync(day(1), pages, { recursive: true });
    rmSync(join(pages, 'Crypto_Story_Galaxy.html'));
    const out = join(root, 'no-ranking-tree');
    const report = await buildSmall(pages, out);
    expect(report.warnings).toContainEqual(expect.stringMatching(/^market-cap ranking: Crypto_Story_Galaxy\.html missing/));
    expect(readJson(join(out, 'v1', '_catalog.json')).free_tier).toEqual([]);
    expect(readJson(join(out, 'v1', 'assets', 'index.basic.json')).data.assets).toEqual([]);
    expect(await checkTree(out)).toEqual([]);
  });

  it('day 1 builds a valid tree with weekly_archive rows before the first published row', async () => {
    const report = await buildSmall(day(1), join(root, 'day1-again'));
    expect(report.errors).toEqual([]);
    expect(await checkTree(day1)).toEqual([]);
    const rows = ledger(day1, 'BTC');
    expect(rows.at(-1)).toMatchObject({ date: '2026-10-13', basis: 'as_published' });
    expect(rows.slice(0, -1).every((r) => r.basis === 'weekly_archive' && r.date < '2026-10-13')).toBe(true);
    expect(rows.length).toBeGreaterThan(50);
  });

  it('days 2 and 3 add one as_published row each and keep every earlier row byte for byte', async () => {
    const before = ledger(day1, 'BTC');
    const after = ledger(day3, 'BTC');
    expect(after.slice(0, before.length)).toEqual(before);
    expect(after.slice(before.length).map((r) => [r.date, r.basis])).toEqual([
      ['2026-10-14', 'as_published'],
      ['2026-10-15', 'as_published'],
    ]);
    // An equity's rows follow its trading days.
    expect(
      ledger(day3, 'SPY')
        .filter((r) => r.basis === 'as_published')
        .map((r) => r.date),
    ).toEqual(['2026-10-13', '2026-10-14', '2026-10-15']);
    expect(await checkTree(day3)).toEqual([]);
  });

  it("a second build of the same day replaces that day's row instead of adding one", async () => {
    const t = copyOf(day3, 'same-day');
    await buildSmall(day(3), t, { now: '2026-10-16T08:30:00Z' });
    expect(ledger(t, 'ETH')).toHaveLength(ledger(day3, 'ETH').length);
    expect(ledger(t, 'ETH').at(-1)).toMatchObject({ date: '2026-10-15', basis: 'as_published' });
  });

  it('reuses unchanged pages from the parse cache on a rebuild', async () => {
    const report = await buildSmall(day(3), copyOf(day3, 'cached'), { now: '2026-10-16T08:30:00Z' });
    expect(report.pages_parsed).toBe(0);
    expect(report.pages_reused).toBe(report.pages_read);
  });
});

describe('determinism', () => {
  it('same pages, same previous tree and same --now give byte-identical trees', async () => {
    const a = join(root, 'det-a');
    const b = join(root, 'det-b');
    await buildSmall(day(1), a);
    await buildSmall(day(2), a, { now: '2026-10-15T00:30:00Z' });
    await buildSmall(day(1), b, { jobs: 1 });
    await buildSmall(day(2), b, { now: '2026-10-15T00:30:00Z', jobs: 1 });
    expect(treeHashes(b)).toEqual(treeHashes(a));
  });
});

describe('failures leave the previous tree as it was', () => {
  /** Day 2's pages with ETH's Gravity card unreadable. */
  let broken = '';
  beforeAll(() => {
    broken = withCard('broken', 'ETH_Price_TWAP_Gravity_Analysis.html', 'Gravity Risk (0-100)', 'about forty');
  });

  it('an unreadable page fails the build, names file and field, and changes nothing', async () => {
    const good = copyOf(day1, 'guard');
    const before = treeHashes(good);
    const err = await buildSmall(broken, good).catch((e) => e);
    expect(err).toBeInstanceOf(BuildError);
    expect(err.problems).toEqual([
      'ETH_Price_TWAP_Gravity_Analysis.html: card "Gravity Risk (0-100)": expected a printed number, found "about forty"',
    ]);
    expect(treeHashes(good)).toEqual(before);
    expect(readdirSync(good).filter((n) => n.startsWith('.v1-'))).toEqual([]);
  });

  it('with --keep-going the asset keeps its previous reading with its old as_of and lists the error', async () => {
    const good = copyOf(day1, 'keep-going');
    const prev = readJson(join(good, 'v1/assets/ETH/risk.json')).data;
    const report = await buildSmall(broken, good, { keepGoing: true, now: '2026-10-15T00:30:00Z' });
    expect(report.errors).toHaveLength(1);
    const eth = readJson(join(good, 'v1/assets/ETH/risk.json')).data;
    expect(eth.gravity).toEqual(prev.gravity);
    expect(eth.gravity.as_of).toBe('2026-10-13T23:58:00Z');
    expect(eth.dca.as_of).toBe('2026-10-14');
    expect(await checkTree(good)).toEqual([]);
  });

  it('a value the page no longer prints is published null, and the report names it with its previous value', async () => {
    const pages = withCard('not-printed', 'ETH_Price_TWAP_Gravity_Analysis.html', 'Market Premium', 'N/A');
    const tree = copyOf(day1, 'not-printed-tree');
    const was = readJson(join(tree, 'v1/assets/ETH/risk.json')).data.twap.premium_pct;
    expect(was).toEqual(expect.any(Number));
    const report = await buildSmall(pages, tree, { now: '2026-10-15T00:30:00Z' });
    expect(readJson(join(tree, 'v1/assets/ETH/risk.json')).data.twap.premium_pct).toBeNull();
    expect(report.warnings).toContain(`ETH: null where the previous tree held a value: twap.premium_pct (was ${was})`);
    // Only what turned null is named: every other asset kept its values.
    expect(report.warnings.filter((w) => w.includes('null where the previous tree held'))).toHaveLength(1);
  });

  it('a value off its scale is an unreadable page: the build fails naming it, --keep-going carries the previous reading', async () => {
    const pages = withCard('off-scale', 'BTC_Polynomial_Phase_Detector.html', 'Cycle Completion Matrix', '250.0%');
    const good = copyOf(day1, 'off-scale-tree');
    const before = treeHashes(good);
    const err = await buildSmall(pages, good, { now: '2026-10-15T00:30:00Z' }).catch((e) => e);
    expect(err).toBeInstanceOf(BuildError);
    expect(err.problems).toEqual([
      expect.stringMatching(/^BTC_Polynomial_Phase_Detector\.html: phase\.completion_pct: .*100.*\(found 250\)$/),
    ]);
    expect(treeHashes(good)).toEqual(before);
    const prev = readJson(join(good, 'v1/assets/BTC/risk.json')).data.phase;
    const report = await buildSmall(pages, good, { now: '2026-10-15T00:30:00Z', keepGoing: true });
    expect(report.carried).toEqual([
      { file: 'BTC_Polynomial_Phase_Detector.html', kind: 'crypto_phase', symbol: 'BTC', reason: 'unreadable', readings: ['phase'] },
    ]);
    expect(readJson(join(good, 'v1/assets/BTC/risk.json')).data.phase).toEqual(prev);
    expect(ledger(good, 'BTC').at(-1)).toMatchObject({ date: '2026-10-14', phase_completion_pct: prev.completion_pct });
  });

  it('a build that would drop a published history row fails', async () => {
    const lossy = join(root, 'lossy');
    await buildSmall(day(1), lossy);
    const catalogFile = join(root, 'catalog-without-ada.json');
    const cat = readJson(join(day(2), 'catalog.json'));
    cat.assets = cat.assets.filter((a: { symbol: string }) => a.symbol !== 'ADA');
    writeFileSync(catalogFile, JSON.stringify(cat));
    const before = treeHashes(lossy);
    const err = await buildSmall(day(2), lossy, { catalog: catalogFile }).catch((e) => e);
    expect(err).toBeInstanceOf(BuildError);
    expect(err.message).toMatch(/history would lose a published row: ADA/);
    expect(treeHashes(lossy)).toEqual(before);
  });

  it("a build whose events would be published before the change feed's last one fails, naming the clock", async () => {
    const t = join(root, 'feed-clock');
    await buildSmall(day(1), t);
    await buildSmall(day(2), t, { now: '2026-10-15T00:30:00Z' });
    expect(readJson(join(t, 'v1/changes/ledger.json')).events.length).toBeGreaterThan(0);
    const before = treeHashes(t);
    const err = await buildSmall(day(3), t, { now: '2026-10-15T00:10:00Z' }).catch((e) => e);
    expect(err).toBeInstanceOf(BuildError);
    expect(err.exitCode).toBe(1);
    expect(err.message).toMatch(/the change feed would lose a published event: new events are published at 2026-10-15T00:10:00Z, before/);
    expect(treeHashes(t)).toEqual(before);
  });

  it('a previous risk file of another shape is rewritten; its asset raises no event that refresh, and the report says so', async () => {
    const t = copyOf(day1, 'feed-odd-previous');
    const path = 'assets/BTC/risk.json';
    const doc = readJson(join(t, 'v1', path));
    delete doc.data.market_context;
    const text = JSON.stringify(doc);
    writeFileSync(join(t, 'v1', path), text);
    const m = readJson(join(t, 'v1', '_manifest.json'));
    m.files[path] = { size: Buffer.byteLength(text), sha256: sha256(text) };
    writeFileSync(join(t, 'v1', '_manifest.json'), JSON.stringify(m));
    const report = await buildSmall(day(2), t, { now: '2026-10-15T00:30:00Z' });
    expect(report.warnings).toContainEqual(
      expect.stringMatching(
        /assets\/BTC\/risk\.json is not an AssetRisk this version reads .*BTC's changes at this refresh are not in the change feed$/,
      ),
    );
    const events = readJson(join(t, 'v1', 'changes', 'ledger.json')).events as { symbol: string | null }[];
    expect(events.length).toBeGreaterThan(0);
    expect(events.some((e) => e.symbol === 'BTC')).toBe(false);
    // Read as it was, BTC's previous file would have raised events at this refresh.
    const normally = readJson(join(day3, 'v1', 'changes', 'ledger.json')).events as { symbol: string | null; published_at: string }[];
    expect(normally.some((e) => e.symbol === 'BTC' && e.published_at === '2026-10-15T00:30:00Z')).toBe(true);
    expect(readJson(join(t, 'v1', path)).data.market_context.universe).toBe('crypto');
  });

  it('pages older than the previous tree (a stale copy of the site) are refused, --keep-going or not: nothing steps back', async () => {
    const t = join(root, 'backwards');
    await buildSmall(day(2), t, { now: '2026-10-15T00:30:00Z' });
    const before = treeHashes(t);
    for (const keepGoing of [false, true]) {
      const err = await buildSmall(day(1), t, { keepGoing }).catch((e) => e);
      expect(err).toBeInstanceOf(BuildError);
      expect([err.exitCode, err.message]).toEqual([
        1,
        expect.stringMatching(
          /^these pages are older than the previous tree: their newest reading is dated 2026-10-13\S*, the tree's 2026-10-14\S* \(a stale copy of the site\?\); the previous tree is untouched$/,
        ),
      ]);
      expect(treeHashes(t)).toEqual(before);
    }
  });

  it('a previous tree whose ledger file has vanished fails the build instead of restarting the history', async () => {
    const t = join(root, 'vanished');
    await buildSmall(day(1), t);
    rmSync(join(t, 'v1/assets/ETH/history/full.json'));
    const err = await buildSmall(day(2), t, { now: '2026-10-15T00:30:00Z' }).catch((e) => e);
    expect(err).toBeInstanceOf(BuildError);
    expect(err.message).toMatch(/the previous tree lists ETH but holds no assets\/ETH\/history\/full\.json/);
  });

  it('check flags a file whose bytes differ from the manifest', async () => {
    const t = copyOf(day1, 'edited');
    const file = join(t, 'v1/assets/SPY/risk.json');
    const text = readFileSync(file, 'utf8');
    writeFileSync(file, text.replace('"EQUITY"', '"EQUITY" '));
    expect(await checkTree(t)).toContain('assets/SPY/risk.json: size or sha256 differs from _manifest.json');
    writeFileSync(file, text);
    expect(await checkTree(t)).toEqual([]);
  });

  it('check fails a tree holding a value off its scale, naming the file and the field', async () => {
    const t = copyOf(day1, 'off-scale-check');
    const path = 'assets/BTC/risk.json';
    const doc = readJson(join(t, 'v1', path));
    doc.data.phase.completion_pct = 250;
    const text = JSON.stringify(doc);
    writeFileSync(join(t, 'v1', path), text);
    const m = readJson(join(t, 'v1', '_manifest.json'));
    m.files[path] = { size: Buffer.byteLength(text), sha256: sha256(text) };
    writeFileSync(join(t, 'v1', '_manifest.json'), JSON.stringify(m));
    expect((await checkTree(t)).join('\n')).toMatch(/assets\/BTC\/risk\.json: \/data\/phase\/completion_pct: must be <= 100/);
  });

  it('writes br and gzip variants of every served file over 1 KB, in the manifest; check verifies each', async () => {
    const t = copyOf(day1, 'variants');
    const m = readJson(join(t, 'v1', '_manifest.json'));
    const entry = m.files['assets/SPY/risk.json'];
    expect(entry.size).toBeGreaterThan(1024);
    expect(Object.keys(entry.encodings)).toEqual(['br', 'gzip']);
    const br = readFileSync(join(t, 'v1/assets/SPY/risk.json.br'));
    expect(brotliDecompressSync(br).toString('utf8')).toBe(readFileSync(join(t, 'v1/assets/SPY/risk.json'), 'utf8'));
    expect(gunzipSync(readFileSync(join(t, 'v1/assets/SPY/risk.json.gz'))).toString('utf8')).toBe(
      readFileSync(join(t, 'v1/assets/SPY/risk.json'), 'utf8'),
    );
    // Never for files the shim does not send whole, nor for small ones.
    for (const [path, e] of Object.entries(m.files) as [string, { size: number; encodings?: object }][]) {
      const internal = path.startsWith('_') || isLedger(path);
      expect(!!e.encodings, path).toBe(e.size > 1024 && !internal);
    }
    const variant = join(t, 'v1/assets/SPY/risk.json.br');
    writeFileSync(variant, Buffer.concat([br.subarray(0, 10), Buffer.from([br[10]! ^ 1]), br.subarray(11)]));
    expect(await checkTree(t)).toContain('assets/SPY/risk.json.br: size or sha256 differs from _manifest.json (encodings.br)');
    rmSync(variant);
    expect(await checkTree(t)).toContain('assets/SPY/risk.json.br: listed in _manifest.json (encodings.br) but absent');
    writeFileSync(variant, br);
    writeFileSync(join(t, 'v1/assets/SPY/stray.txt'), 'x');
    expect(await checkTree(t)).toEqual(['assets/SPY/stray.txt: not listed in _manifest.json']);
    rmSync(join(t, 'v1/assets/SPY/stray.txt'));
    expect(await checkTree(t)).toEqual([]);
  });
});

describe("every stored publication's markup", () => {
  it.each(Object.entries(PUBLICATIONS))(
    '%s: builds with no error or warning, to the readings of our default markup',
    async (name, markup) => {
      const pages = join(root, `markup-${name}`);
      await writeSite({ out: pages, day: 1, symbols: SMALL, historyStart: '2025-06-01', catalog: CATALOG, markup });
      const out = join(root, `markup-${name}-tree`);
      const report = await buildSmall(pages, out);
      expect([report.errors, report.warnings, report.carried]).toEqual([[], [], []]);
      for (const symbol of SMALL) {
        const risk = readJson(join(out, 'v1/assets', symbol, 'risk.json')).data;
        const expected = readJson(join(day1, 'v1/assets', symbol, 'risk.json')).data;
        // A phase page that labels its bars by their Monday is dated a day after one that labels them by Sunday.
        if (markup.phaseBar === 'monday' && risk.asset_class === 'CRYPTO' && expected.phase) {
          const sunday = Date.parse(`${expected.phase.as_of}T00:00:00Z`);
          expect(risk.phase.as_of).toBe(new Date(sunday + 86_400_000).toISOString().slice(0, 10));
          risk.phase.as_of = expected.phase.as_of;
        }
        // Labels are quoted as printed: the publication that printed new ones publishes them.
        const context = risk.market_context;
        if (markup.newSectorLabels && context.macro_risk) {
          expect([context.peak_valley.zone, context.macro_risk.status]).toEqual(['Breakout', 'Balanced Rotation']);
          [context.peak_valley.zone, context.macro_risk.status] = [
            expected.market_context.peak_valley.zone,
            expected.market_context.macro_risk.status,
          ];
        }
        expect(risk, symbol).toEqual(expected);
      }
    },
  );
});

describe('parsing on worker threads', () => {
  it('the compiled build (--jobs 2) reads on worker threads what it reads in-process: the same readings and cache', async () => {
    // Workers need compiled JavaScript: this project's global setup has compiled dist/.
    const compiled = (await import(
      join(ROOT, 'dist', 'generator', 'site', 'read-site.js')
    )) as typeof import('../../generator/site/read-site.js');
    const found = await discover(
      day(1),
      CATALOG.filter((a) => SMALL.includes(a.symbol)),
    );
    expect(found.pages.length).toBeGreaterThan(8); // fewer pages are parsed in-process whatever --jobs says
    const options = { wantsArchive: (ref: { symbol: string | null }) => ref.symbol === 'BTC', refuse: () => null };
    const threads = await compiled.readSite(day(1), found.pages, undefined, { ...options, jobs: 2 });
    const here = await readSite(day(1), found.pages, undefined, { ...options, jobs: 1 });
    expect(threads.results).toEqual(here.results);
    expect(threads.cache).toEqual(here.cache);
  });
});

describe('progress', () => {
  it('is told of every page read, up to the number to read', async () => {
    const seen: [number, number][] = [];
    const report = await buildSmall(day(1), join(root, 'progress'), { progress: (done, total) => seen.push([done, total]) });
    expect(seen.length).toBe(report.pages_parsed);
    expect(seen.at(-1)).toEqual([report.pages_parsed, report.pages_parsed]);
  });
});

describe('check', () => {
  it('names a manifest entry that is no size and hash, and does not stop at it', async () => {
    const t = copyOf(day1, 'check-odd-manifest');
    const file = join(t, 'v1', '_manifest.json');
    const m = readJson(file);
    m.files['assets/BTC/risk.json'] = null;
    writeFileSync(file, JSON.stringify(m));
    const problems = await checkTree(t);
    expect(problems).toContain('_manifest.json: files["assets/BTC/risk.json"] is not a size and a sha256');
    expect(problems).toContain('_manifest.json: /files/assets~1BTC~1risk.json: must be object');
  });
});

describe('rebuilds', () => {
  it('link unchanged files from the previous tree and rewrite a hand-edited one', async () => {
    const t = join(root, 'relink');
    await buildSmall(day(1), t);
    const edited = join(t, 'v1/assets/ADA/risk.json');
    const original = readFileSync(edited, 'utf8');
    writeFileSync(edited, original.replace('"Cardano"', '"Cardano!"'));
    const report = await buildSmall(day(1), t);
    expect(report.files_linked).toBe(report.files_written - 2); // all but the manifest and the edited file
    expect(readFileSync(edited, 'utf8')).toBe(original);
    expect(await checkTree(t)).toEqual([]);
  });

  it('with nothing changed re-links the whole previous tree and rewrites only the manifest', async () => {
    const t = join(root, 'idle');
    await buildSmall(day(2), t, { now: '2026-10-15T00:30:00Z' });
    const before = treeHashes(t);
    const report = await buildSmall(day(2), t, { now: '2026-10-15T08:30:00Z' });
    expect(report.relinked).toBe(true);
    expect(report.files_linked).toBe(report.files_written - 1);
    const after = treeHashes(t);
    expect([...after.keys()]).toEqual([...before.keys()]);
    for (const [p, h] of after) if (p !== '_manifest.json') expect(h, p).toBe(before.get(p));
    expect(readJson(join(t, 'v1/_manifest.json')).built_at).toBe('2026-10-15T08:30:00Z');
    expect(await checkTree(t)).toEqual([]);
  });

  it('with no page touched re-links before reading the previous ledgers or any page', async () => {
    const t = join(root, 'idle-untouched');
    await buildSmall(day(2), t, { now: '2026-10-15T00:30:00Z' });
    const report = await buildSmall(day(2), t, { now: '2026-10-15T08:30:00Z' });
    expect(report.relinked).toBe(true);
    expect(report).toMatchObject({ pages_parsed: 0, pages_reused: report.pages_read, errors: [], carried: [] });
  });

  it('pages touched but byte-identical give the same tree, and once hashed are found unchanged: all but the build time linked', async () => {
    const t = join(root, 'idle-touched');
    const pages = join(root, 'touched-pages');
    cpSync(day(2), pages, { recursive: true });
    await buildSmall(pages, t, { now: '2026-10-15T00:30:00Z' });
    const before = treeHashes(t);
    const touchAll = (day: string) => {
      for (const f of readdirSync(pages)) utimesSync(join(pages, f), new Date(), new Date(day));
    };
    // The build that first read the pages kept no hash of them: touched, they are parsed again, and hashed.
    touchAll('2030-01-01T00:00:00Z');
    const hashed = await buildSmall(pages, t, { now: '2026-10-15T08:30:00Z' });
    expect(hashed.pages_parsed).toBe(hashed.pages_read);
    touchAll('2030-01-02T00:00:00Z');
    const report = await buildSmall(pages, t, { now: '2026-10-15T09:30:00Z' });
    expect(report.relinked).toBe(false);
    expect(report.pages_parsed).toBe(0);
    // The build time is in the manifest, health.json and the document's example of it (with its two variants).
    const stamped = ['_manifest.json', 'health.json', 'openapi.json', 'openapi.json.br', 'openapi.json.gz'];
    for (const r of [hashed, report]) expect(r.files_linked).toBe(r.files_written - stamped.length);
    const after = treeHashes(t);
    for (const [p, h] of after) if (!stamped.includes(p)) expect(h, p).toBe(before.get(p));
    expect(readJson(join(t, 'v1/health.json')).built_at).toBe('2026-10-15T09:30:00Z');
  });

  it('a different catalogue is a different input: the tree is built again, not re-linked', async () => {
    const t = join(root, 'recatalogued');
    await buildSmall(day(2), t, { now: '2026-10-15T00:30:00Z' });
    const catalogFile = join(root, 'catalog-renamed.json');
    const cat = readJson(join(day(2), 'catalog.json'));
    cat.assets.find((a: { symbol: string }) => a.symbol === 'ADA').name = 'Cardano (ADA)';
    writeFileSync(catalogFile, JSON.stringify(cat));
    const report = await buildSmall(day(2), t, { catalog: catalogFile, now: '2026-10-15T08:30:00Z' });
    expect(report.relinked).toBe(false);
    expect(readJson(join(t, 'v1/assets/ADA/risk.json')).data.name).toBe('Cardano (ADA)');
  });

  it('a build that starts a ledger parses the pages with an archive whole (once), and takes the others from the cache', async () => {
    const t = join(root, 'from-cache');
    await buildSmall(day(1), t);
    const rows = readJson(join(t, 'v1/assets/BTC/history/full.json')).data.rows;
    // No tree at all (the link and every tree gone), only the parse cache: a new ledger, on purpose (--init).
    rmSync(join(t, 'v1'));
    rmSync(join(t, '.trees'), { recursive: true });
    const report = await buildSmall(day(1), t, { init: true });
    expect(report.previous).toBeNull();
    // The archive kinds (Gravity, TWAP risk, SMA, DCA, equity TWAP and composite) are parsed; phase and market
    // pages come from the cache; every page exactly once.
    const archiveKinds =
      /_Price_TWAP_Gravity_Analysis|_Price_TWAP_Risk_Analysis|-usd_price_with_risk|_lin_reg_price_with_risk|_Equities_TWAP|_Composite_SMA_Risk/;
    const pages = readJson(join(t, 'v1/_manifest.json')).pages as string[];
    expect(report.pages_parsed).toBe(pages.filter((p) => archiveKinds.test(p)).length);
    expect(report.pages_reused).toBe(pages.length - report.pages_parsed);
    expect(readJson(join(t, 'v1/assets/BTC/history/full.json')).data.rows).toEqual(rows);
  });
});

describe('the tree', () => {
  it('holds every response file the design names', () => {
    const v1 = join(day3, 'v1');
    for (const f of [
      'openapi.json',
      'health.json',
      '_catalog.json',
      '_manifest.json',
      'assets/index.basic.json',
      'assets/index.pro.json',
      'assets/index.ultra.json',
      'assets/BTC/risk.json',
      'assets/BTC/history/full.json',
      'assets/BTC/history/page-365.json',
      'assets/BTC/history/page-90.json',
      'signals/dca/BTC.json',
      'market/crypto/summary.json',
      'market/quantum/summary.json',
    ])
      expect(existsSync(join(v1, f)), f).toBe(true);
    expect(existsSync(join(v1, 'signals/dca/NVDA.json'))).toBe(false);
  });

  it('leaves no staging folder behind: v1 names the one tree under .trees', () => {
    expect(readdirSync(day3).filter((n) => n.startsWith('.v1-'))).toEqual([]);
    expect(readdirSync(join(day3, '.trees'))).toHaveLength(1);
    expect(readlinkSync(join(day3, 'v1'))).toBe(join('.trees', readdirSync(join(day3, '.trees'))[0]!));
  });
});
