/** Validation of a whole tree: every file against its schema, each history row checked once per build. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fg from 'fast-glob';
import { beforeAll, describe, expect, it } from 'vitest';
import { openApiDocument } from '../../../generator/openapi/document.js';
import { validateTree } from '../../../generator/output/validate.js';
import { buildSmall, smallSite, tempDir } from '../../helpers.js';

const root = tempDir('rr-validate-');
const out = join(root, 'out');
type Row = Record<string, unknown>;
type RowsDoc = { data: { rows: Row[] } };

/** The built tree as the build holds it before writing: path to parsed JSON, in the build's order. */
function loadTree(): Map<string, unknown> {
  const dir = join(out, 'v1');
  const paths = fg
    .sync('**/*.json', { cwd: dir, dot: false })
    .filter((p) => p !== '_manifest.json')
    .sort();
  return new Map(paths.map((p) => [p, JSON.parse(readFileSync(join(dir, p), 'utf8')) as unknown]));
}

/** As the build makes them: the precomputed pages hold the ledger's own row objects. */
function shareRows(files: Map<string, unknown>, symbol: string): Row[] {
  const full = files.get(`assets/${symbol}/history/full.json`) as RowsDoc;
  for (const limit of [90, 365]) {
    const page = files.get(`assets/${symbol}/history/page-${limit}.json`) as RowsDoc;
    page.data.rows = full.data.rows.slice(-page.data.rows.length);
  }
  return full.data.rows;
}

beforeAll(async () => {
  const pages = join(root, 'site');
  await smallSite(pages, 1, '2025-06-01', ['BTC', 'SPY']);
  await buildSmall(pages, out);
});

describe('validateTree', () => {
  it('passes the tree a build wrote', async () => {
    expect(await validateTree(loadTree(), openApiDocument())).toEqual([]);
  });

  it('a bad row shared by the ledger and its pages is reported in each file, at its index there', async () => {
    const files = loadTree();
    const rows = shareRows(files, 'BTC');
    rows.at(-1)!.twap_risk_level = 11;
    const inPage = (limit: number) => (files.get(`assets/BTC/history/page-${limit}.json`) as RowsDoc).data.rows.length - 1;
    expect(await validateTree(files, openApiDocument())).toEqual([
      `assets/BTC/history/full.json: /data/rows/${rows.length - 1}/twap_risk_level: must be <= 10`,
      `assets/BTC/history/page-365.json: /data/rows/${inPage(365)}/twap_risk_level: must be <= 10`,
      `assets/BTC/history/page-90.json: /data/rows/${inPage(90)}/twap_risk_level: must be <= 10`,
    ]);
  });

  it('a row checked in the ledger is not checked again in its pages', async () => {
    const files = loadTree();
    const rows = shareRows(files, 'BTC');
    const checked = new WeakSet<object>();
    expect(await validateTree(files, openApiDocument(), new Set(), checked)).toEqual([]);
    expect(rows.every((r) => checked.has(r))).toBe(true);
  });

  it('a bad row only in a page file is reported there, at its index in the page', async () => {
    const files = loadTree();
    shareRows(files, 'BTC');
    const page = files.get('assets/BTC/history/page-90.json') as RowsDoc;
    page.data.rows[3] = { ...page.data.rows[3], dca_risk: 2 };
    expect(await validateTree(files, openApiDocument())).toEqual(['assets/BTC/history/page-90.json: /data/rows/3/dca_risk: must be <= 1']);
  });

  it('rows the caller vouches for (the previous ledger under the same contract) are not checked again; others are', async () => {
    const files = loadTree();
    const rows = shareRows(files, 'SPY');
    const vouched = () => new WeakSet<object>(rows.slice(0, -1));
    rows[0]!.price = 'not a number';
    expect((await validateTree(files, openApiDocument(), new Set(), vouched())).filter((p) => /: \/data\/rows/.test(p))).toEqual([]);
    rows.at(-1)!.price = 'not a number';
    expect(await validateTree(files, openApiDocument(), new Set(), vouched())).toEqual(
      ['full.json', 'page-365.json', 'page-90.json'].map(
        (f) => `assets/SPY/history/${f}: /data/rows/${rows.length - 1}/price: must be number,null`,
      ),
    );
  });
});
