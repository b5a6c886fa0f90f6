/** Validation of a whole tree: every file against its schema, then the rules across files. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fg from 'fast-glob';
import { beforeAll, describe, expect, it } from 'vitest';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { openApiDocument } from '../../../generator/openapi/document.js';
import { internalSchemas } from '../../../generator/openapi/schemas.js';
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
    expect(validateTree(loadTree(), openApiDocument())).toEqual([]);
  });

  it('a bad row is reported in each file that holds it, at its index there', async () => {
    const files = loadTree();
    const rowsOf = (path: string) => (files.get(`assets/BTC/history/${path}.json`) as RowsDoc).data.rows;
    for (const path of ['full', 'page-365', 'page-90']) rowsOf(path).at(-1)!.twap_risk_level = 11;
    expect(validateTree(files, openApiDocument())).toEqual(
      ['full', 'page-365', 'page-90'].map(
        (path) => `assets/BTC/history/${path}.json: /data/rows/${rowsOf(path).length - 1}/twap_risk_level: must be <= 10 (found 11)`,
      ),
    );
  });

  it('refuses an impossible price, regression line or premium, naming the file, the field and the value (decision 101)', () => {
    for (const [edit, said] of [
      [(d: { price: Row; dca: Row }) => (d.price.value = -5), '/data/price/value: must be > 0 (found -5)'],
      [(d: { price: Row; dca: Row }) => (d.price.value = 1e308), '/data/price/value: must be <= 1000000000 (found 1e+308)'],
      [(d: { price: Row; dca: Row }) => (d.dca.ceiling = -1e308), '/data/dca/ceiling: must be > 0 (found -1e+308)'],
      [(d: { price: Row; dca: Row }) => (d.dca.premium_pct = -100), '/data/dca/premium_pct: must be > -100 (found -100)'],
    ] as const) {
      const files = loadTree();
      edit((files.get('assets/BTC/risk.json') as { data: { price: Row; dca: Row } }).data);
      expect(validateTree(files, openApiDocument())).toEqual([`assets/BTC/risk.json: ${said}`]);
    }
    const files = loadTree();
    (files.get('assets/BTC/history/full.json') as RowsDoc).data.rows.at(-1)!.price = 0;
    expect(validateTree(files, openApiDocument())).toContainEqual(
      expect.stringMatching(/^assets\/BTC\/history\/full\.json: \/data\/rows\/\d+\/price: must be > 0 \(found 0\)$/),
    );
  });

  it('refuses a catalogue whose symbol is a path, naming the file and the key (decision 101)', () => {
    const files = loadTree();
    const catalog = files.get('_catalog.json') as { assets: Record<string, unknown> };
    catalog.assets['..'] = catalog.assets.BTC;
    expect(validateTree(files, openApiDocument())).toEqual([
      expect.stringMatching(/^_catalog\.json: \/assets: must match pattern .* \(key "\.\."\)$/),
    ]);
  });

  it('a page that is not the page cut from its ledger is reported', async () => {
    const files = loadTree();
    const page = files.get('assets/BTC/history/page-90.json') as RowsDoc;
    page.data.rows[3] = { ...page.data.rows[3], price: 1 };
    expect(validateTree(files, openApiDocument())).toEqual(['assets/BTC/history/page-90.json: differs from the page cut from the ledger']);
  });

  it('holds a ledger to the history rules: dates strictly ascending, archive rows before the first published day', async () => {
    const files = loadTree();
    const full = files.get('assets/SPY/history/full.json') as { data: { rows: Row[]; total_row_count: number } };
    const last = full.data.rows.at(-1)!;
    full.data.rows.push({ ...last }, { ...last, date: '2099-01-01', basis: 'weekly_archive' });
    full.data.total_row_count += 2;
    const n = full.data.rows.length;
    expect(validateTree(files, openApiDocument())).toEqual(
      expect.arrayContaining([
        `assets/SPY/history/full.json: data.rows[${n - 2}].date ${last.date as string} is not after ${last.date as string}`,
        expect.stringMatching(new RegExp(`^assets/SPY/history/full.json: data.rows\\[${n - 1}\\] is weekly_archive on or after`)),
      ]),
    );
  });
});
