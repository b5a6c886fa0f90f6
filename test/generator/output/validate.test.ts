/** Validation of a whole tree: every file against its schema, each history row checked once per build. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fg from 'fast-glob';
import { beforeAll, describe, expect, it } from 'vitest';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { openApiDocument } from '../../../generator/openapi/document.js';
import { internalSchemas } from '../../../generator/openapi/schemas.js';
import { LedgerRows, PublishedRows } from '../../../generator/contract/ledger-rows.js';
import { TreeValidator, validateTree } from '../../../generator/output/validate.js';
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

describe('the contract the build validates against', () => {
  it('is valid JSON Schema 2020-12, every schema of it (the build compiles it without this check, per run)', () => {
    const ajv = new Ajv2020.default({ strict: false });
    addFormats.default(ajv);
    const doc = openApiDocument() as { components: { schemas: Record<string, object> } };
    const schemas = { ...doc.components.schemas, ...internalSchemas() };
    for (const [name, schema] of Object.entries(schemas)) expect(ajv.validateSchema(schema), `${name}: ${ajv.errorsText()}`).toBe(true);
    expect(Object.keys(schemas).length).toBeGreaterThan(20);
    expect(ajv.validateSchema({ type: 'object', properties: { a: { type: 'strnig' } } })).toBe(false);
  });
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
    const validator = new TreeValidator(openApiDocument());
    expect(validator.file('assets/BTC/history/full.json', files.get('assets/BTC/history/full.json'))).toEqual([]);
    rows.at(-1)!.twap_risk_level = 11; // spoiled after its check: the pages holding it are not checked for it again
    expect(validator.file('assets/BTC/history/page-90.json', files.get('assets/BTC/history/page-90.json'))).toEqual([]);
  });

  it('a bad row only in a page file is reported there, at its index in the page', async () => {
    const files = loadTree();
    shareRows(files, 'BTC');
    const page = files.get('assets/BTC/history/page-90.json') as RowsDoc;
    page.data.rows[3] = { ...page.data.rows[3], dca_risk: 2 };
    expect(await validateTree(files, openApiDocument())).toEqual(['assets/BTC/history/page-90.json: /data/rows/3/dca_risk: must be <= 1']);
  });

  it('rows carried as the previous ledger spelled them are not checked again under the same contract; added rows are', async () => {
    const fullPath = join(out, 'v1', 'assets/SPY/history/full.json');
    const published = readFileSync(fullPath, 'utf8');
    const n = (JSON.parse(published) as RowsDoc).data.rows.length;
    // A middle row spoiled in the published file, as only a previous build under another contract could have left it.
    const lines = published.split('\n');
    const spoiled = lines.findIndex((l, i) => i > lines.indexOf('    "rows": [') + 1 && /"price":[-\d.]+/.test(l));
    lines[spoiled] = lines[spoiled]!.replace(/"price":[-\d.]+/, '"price":"not a number"');
    const carried = PublishedRows.read(new TextEncoder().encode(lines.join('\n')))!;
    const index = spoiled - lines.indexOf('    "rows": [') - 1;
    const continued = (added: Row[]) => {
      const files = loadTree();
      const full = files.get('assets/SPY/history/full.json') as { data: { rows: unknown } };
      full.data.rows = new LedgerRows(carried, n, added as never);
      files.delete('assets/SPY/history/page-90.json'); // the pages are cut from the ledger: the rows are the question here
      files.delete('assets/SPY/history/page-365.json');
      return files;
    };
    const rowProblems = (ps: string[]) => ps.filter((p) => /: \/data\/rows/.test(p));
    expect(rowProblems(await validateTree(continued([]), openApiDocument(), new Set(), { carriedVouched: true }))).toEqual([]);
    expect(rowProblems(await validateTree(continued([]), openApiDocument()))).toEqual([
      `assets/SPY/history/full.json: /data/rows/${index}/price: must be number,null`,
    ]);
    const bad = { ...carried.row(n - 1), date: '2099-01-01', price: 'not a number' };
    expect(rowProblems(await validateTree(continued([bad]), openApiDocument(), new Set(), { carriedVouched: true }))).toEqual([
      `assets/SPY/history/full.json: /data/rows/${n}/price: must be number,null`,
    ]);
  });

  it('holds a continued ledger to the history rules from its last carried row on', async () => {
    const carried = PublishedRows.read(readFileSync(join(out, 'v1', 'assets/SPY/history/full.json')))!;
    const files = loadTree();
    const full = files.get('assets/SPY/history/full.json') as { data: { rows: unknown; total_row_count: number } };
    const last = carried.row(carried.length - 1);
    full.data.rows = new LedgerRows(carried, carried.length, [{ ...last }]);
    full.data.total_row_count = carried.length + 1;
    expect(await validateTree(files, openApiDocument(), new Set(), { carriedVouched: true })).toEqual(
      expect.arrayContaining([`assets/SPY/history/full.json: data.rows[${carried.length}].date ${last.date} is not after ${last.date}`]),
    );
  });
});
