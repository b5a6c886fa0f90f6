/**
 * No impossible number, no silent substitute (decision 101), through the build: a price ten times up or down from
 * the asset's last published one, or off its bounds, fails the build naming the page, the field and the value, and
 * under --keep-going the page's readings are carried from the previous tree (exit 4), today's ledger row with them;
 * a catalogue whose symbol is a path is refused before anything is read; `check` refuses a tree holding a number off
 * its bounds.
 */
import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildSmall, cli, readJson, smallSite, tempDir, treeHashes } from '../helpers.js';
import { BuildError } from '../../generator/build.js';
import { checkTree } from '../../generator/check.js';
import { sha256 } from '../../generator/output/manifest.js';

const root = tempDir('rr-impossible-');
const SYMBOLS = ['BTC', 'AERO', 'SPY'];
const day = (n: number) => join(root, `site-day${n}`);
const day1 = join(root, 'day1-tree');
const NOW2 = '2026-10-15T00:30:00Z';
const GRAVITY = 'BTC_Price_TWAP_Gravity_Analysis.html';
const risk = (tree: string, s = 'BTC') => readJson(join(tree, 'v1', 'assets', s, 'risk.json')).data;
const ledger = (tree: string, s = 'BTC') =>
  readJson(join(tree, 'v1', 'assets', s, 'history', 'full.json')).data.rows as Record<string, unknown>[];
const copyOf = (tree: string, name: string) => {
  const to = join(root, name);
  cpSync(tree, to, { recursive: true, verbatimSymlinks: true });
  return to;
};

/** Day 2's pages with the last point of BTC's Gravity price trace set by `price` (the day's price). */
function pagesWithPrice(name: string, price: (p: number) => number): string {
  const pages = join(root, name);
  cpSync(day(2), pages, { recursive: true });
  const file = join(pages, GRAVITY);
  const html = readFileSync(file, 'utf8');
  const head = '"y":{"dtype":"f8","bdata":"';
  const start = html.indexOf(head, html.indexOf('"name":"Price Trend"')) + head.length;
  const end = html.indexOf('"', start);
  const bytes = Buffer.from(html.slice(start, end).replace(/\\u002f/g, '/'), 'base64');
  const values = new Float64Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  values[values.length - 1] = price(values[values.length - 1]!);
  writeFileSync(file, html.slice(0, start) + Buffer.from(values.buffer).toString('base64').replace(/\//g, '\\u002f') + html.slice(end));
  return pages;
}

beforeAll(async () => {
  for (const n of [1, 2]) await smallSite(day(n), n, '2025-06-01', SYMBOLS);
  await buildSmall(day(1), day1);
});

describe('a price no market makes', () => {
  it('thirty times the last published price fails the build naming the page, the field and both prices', async () => {
    const last = ledger(day1).at(-1)!;
    expect(last).toMatchObject({ date: '2026-10-13', basis: 'as_published' });
    const pages = pagesWithPrice('thirty-times', (p) => p * 30);
    const tree = copyOf(day1, 'thirty-times-tree');
    const before = treeHashes(tree);
    const err = await buildSmall(pages, tree, { now: NOW2 }).catch((e) => e);
    expect(err).toBeInstanceOf(BuildError);
    expect(err.problems).toEqual([
      expect.stringMatching(
        new RegExp(
          `^${GRAVITY.replace(/\./g, '\\.')}: price\\.value: [\\d.]+ is [\\d.]+ times up from BTC's last published price \\(${last.price} on 2026-10-13\\): no market moves 10 times between two publications$`,
        ),
      ),
    ]);
    expect(treeHashes(tree)).toEqual(before);
  });

  it("under --keep-going the page is carried: the previous price, and today's ledger row with it; the CLI exits 4", async () => {
    const pages = pagesWithPrice('tenth', (p) => p / 30);
    const tree = copyOf(day1, 'tenth-tree');
    const previous = risk(tree);
    const report = await buildSmall(pages, tree, { now: NOW2, keepGoing: true });
    expect(report.carried).toEqual([
      expect.objectContaining({ file: GRAVITY, kind: 'crypto_gravity', symbol: 'BTC', reason: 'unreadable' }),
    ]);
    expect(report.errors).toEqual([
      expect.stringMatching(/^BTC_Price_TWAP_Gravity_Analysis\.html: price\.value: .* times down from BTC's/),
    ]);
    const now = risk(tree);
    expect(now.price).toEqual(previous.price);
    expect(now.gravity).toEqual(previous.gravity);
    expect(ledger(tree).at(-1)).toMatchObject({ date: '2026-10-14', basis: 'as_published', price: previous.price.value });
    expect(await checkTree(tree)).toEqual([]);

    const again = copyOf(day1, 'tenth-cli');
    const r = cli(['build', '--pages', pages, '--out', again, '--catalog', join(day(1), 'catalog.json'), '--now', NOW2, '--keep-going']);
    expect(r.status, r.stderr).toBe(4);
    expect(r.stderr + r.stdout).toMatch(/BTC_Price_TWAP_Gravity_Analysis\.html: price\.value: .* times down/);
  });

  it('a price off its bounds (-5) is refused the same way, on a first build too', async () => {
    const pages = pagesWithPrice('negative', () => -5);
    const err = await buildSmall(pages, join(root, 'negative-tree'), { now: NOW2 }).catch((e) => e);
    expect(err).toBeInstanceOf(BuildError);
    expect(err.problems).toEqual([`${GRAVITY}: price.value: Too small: expected number to be >0 (found -5)`]);
    expect(existsSync(join(root, 'negative-tree', 'v1'))).toBe(false);
  });
});

describe('a catalogue symbol is a name, never a path', () => {
  it.each(['..', '.', '.hidden'])('%s is refused when the catalogue is loaded, naming the file and the entry', async (symbol) => {
    const pages = join(root, `symbol-${symbol.length}-${symbol.charCodeAt(1) || 0}`);
    cpSync(day(1), pages, { recursive: true });
    const catalog = join(pages, 'catalog.json');
    const doc = readJson(catalog);
    const i = doc.assets.findIndex((a: { symbol: string }) => a.symbol === 'AERO');
    doc.assets[i].symbol = symbol;
    writeFileSync(catalog, JSON.stringify(doc));
    const out = join(root, `${pages}-tree`);
    const err = await buildSmall(pages, out).catch((e) => e);
    expect(err).toBeInstanceOf(BuildError);
    expect(err.message).toBe(
      `${catalog}: assets.${i}.symbol: a symbol is 1 to 20 letters, digits, _ . -, not starting with a dot (found ${JSON.stringify(symbol)})`,
    );
    expect(existsSync(join(out, 'v1'))).toBe(false);
  });
});

describe('check', () => {
  it('refuses a tree holding a price off its bounds, naming the file, the field and the value', async () => {
    const tree = copyOf(day1, 'checked');
    const file = join(tree, 'v1', 'assets', 'BTC', 'risk.json');
    const doc = readJson(file);
    doc.data.price.value = 1e308;
    writeFileSync(file, JSON.stringify(doc, null, 2));
    const manifestFile = join(tree, 'v1', '_manifest.json');
    const manifest = readJson(manifestFile);
    const bytes = readFileSync(file);
    manifest.files['assets/BTC/risk.json'] = { size: bytes.length, sha256: sha256(bytes) };
    writeFileSync(manifestFile, JSON.stringify(manifest, null, 2));
    // The file's variants, made from the bytes before, are reported too; the number is named with its bounds.
    expect(await checkTree(tree)).toContain('assets/BTC/risk.json: /data/price/value: must be <= 1000000000 (found 1e+308)');
  });
});
