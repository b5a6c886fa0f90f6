/**
 * The document's schemas are generated from the contract's zod shapes. What the contract requires of every
 * response is pinned in `fixtures/contract/schemas.json` (the schemas the API was published with, written from the
 * spec); the generated ones must say exactly that. And the two forms of one shape agree on real files: what the
 * closed JSON Schema accepts, the zod shape accepts.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import * as shapes from '../../../generator/contract/shapes.js';
import { SCHEMA_OF } from '../../../generator/contract/tree.js';
import { openApiDocument } from '../../../generator/openapi/document.js';
import { componentSchemas, internalSchemas } from '../../../generator/openapi/schemas.js';
import { compileSchemas } from '../../../generator/output/validate.js';
import { buildSmall, ROOT, readJson, smallSite, tempDir } from '../../helpers.js';

/** Order is not meaning in `enum` and `required`; everything else must be equal. */
const meaning = (v: unknown): unknown => {
  if (Array.isArray(v)) return v.map(meaning);
  if (!v || typeof v !== 'object') return v;
  return Object.fromEntries(
    Object.entries(v).map(([k, x]) => [k, (k === 'enum' || k === 'required') && Array.isArray(x) ? [...x].sort() : meaning(x)]),
  );
};

const root = tempDir('rr-schemas-');
const files = new Map<string, unknown>();

beforeAll(async () => {
  const pages = join(root, 'site');
  await smallSite(pages, 1);
  await buildSmall(pages, join(root, 'public'));
  const v1 = join(root, 'public', 'v1');
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith('.json')) files.set(relative(v1, p), readJson(p));
    }
  };
  walk(v1);
});

describe('schemas generated from the zod shapes', () => {
  it('say exactly what the contract requires of every response, and the document carries them', () => {
    const contract = JSON.parse(readFileSync(join(ROOT, 'fixtures', 'contract', 'schemas.json'), 'utf8'));
    // A contract change on purpose (a new AssetRisk field) is written into the pin by `npm run contract:pin -- Name`.
    const onPurpose = (names: string) => `on purpose: npm run contract:pin -- ${names}, and review the diff it makes`;
    const [shapes, pinned] = [Object.keys(componentSchemas()), Object.keys(contract)];
    const other = [...shapes.filter((n) => !pinned.includes(n)), ...pinned.filter((n) => !shapes.includes(n))];
    expect(
      shapes,
      `the schemas differ from the pin's, fixtures/contract/schemas.json; ${onPurpose(other.join(' ') || '(every one)')}`,
    ).toEqual(pinned);
    for (const [name, schema] of Object.entries(componentSchemas()))
      expect(
        meaning(schema),
        `${name}: the shapes say otherwise than the pinned contract, fixtures/contract/schemas.json; ${onPurpose(name)}`,
      ).toEqual(meaning(contract[name]));
    expect(openApiDocument().components.schemas).toBe(componentSchemas());
  });

  it('refer to one another by name: the shared shapes are written once', () => {
    const text = JSON.stringify(componentSchemas());
    expect(text.match(/"\$ref":"#\/components\/schemas\/Gravity"/g)).toHaveLength(1);
    expect(JSON.stringify(internalSchemas().HistoryLedger)).toContain('"$ref":"openapi.json#/components/schemas/HistoryRow"');
  });

  it('a file the closed JSON Schema accepts, its zod shape accepts too, field for field', () => {
    const closed = compileSchemas(openApiDocument());
    const byName: Record<string, z.ZodType> = Object.fromEntries(
      Object.values(shapes).flatMap((s) => {
        const meta = s && typeof s === 'object' && '_zod' in s ? shapes.SHAPES.get(s as z.ZodType) : undefined;
        return meta ? [[shapes.INTERNAL_IDS.has(meta.id) ? `x-internal-${meta.id}` : meta.id, s as z.ZodType]] : [];
      }),
    );
    let checked = 0;
    for (const [path, doc] of files) {
      const name = SCHEMA_OF.find(([re]) => re.test(path))![1];
      expect(closed(name)(doc), path).toBe(true);
      const parsed = byName[name]!.safeParse(doc);
      expect(parsed.error?.issues ?? [], path).toEqual([]);
      if (name !== 'x-internal-OpenApi') expect(parsed.data, path).toEqual(doc);
      checked++;
    }
    expect(checked).toBeGreaterThan(40);
  });

  it('a zod shape refuses what the closed schema refuses: a value out of range, a missing field', () => {
    const risk = [...files].find(([p]) => p.endsWith('/risk.json'))![1] as { data: Record<string, unknown> };
    const closed = compileSchemas(openApiDocument())('AssetRiskResponse');
    const { stale_models: _, ...missing } = risk.data;
    for (const bad of [
      { ...risk, data: { ...risk.data, market_cap_rank: 0 } },
      { ...risk, data: missing },
    ]) {
      expect(closed(bad)).toBe(false);
      expect(shapes.AssetRiskResponse.safeParse(bad).success).toBe(false);
    }
  });
});
