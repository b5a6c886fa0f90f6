/** The catalogue of assets the API serves, validated on load: a bad entry names the file, the field and the value. */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { defaultCatalogPath } from '../paths.js';

import { MODEL_KEYS, SYMBOL_PATTERN, UNIVERSES } from '../contract/constants.js';

export { UNIVERSES, type Universe } from '../contract/constants.js';

const Asset = z.object({
  symbol: z.string().regex(SYMBOL_PATTERN),
  name: z.string().min(1),
  asset_class: z.enum(['CRYPTO', 'EQUITY']),
  universes: z.array(z.enum(UNIVERSES)).min(1),
  file_id: z.string().regex(/^[A-Za-z0-9_.-]+$/),
  models: z.array(z.enum(MODEL_KEYS)),
  data_paused_since: z.string().optional(),
});
export type Asset = z.infer<typeof Asset>;

const Catalog = z.object({ assets: z.array(Asset).min(1) }).superRefine((c, ctx) => {
  const seen = new Set<string>();
  c.assets.forEach((a, i) => {
    const key = a.symbol.toUpperCase();
    if (seen.has(key)) ctx.addIssue({ code: 'custom', path: ['assets', i, 'symbol'], message: `duplicate symbol ${a.symbol}` });
    seen.add(key);
  });
});

export function loadCatalog(file = defaultCatalogPath()): Asset[] {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new Error(`${file}: cannot read the catalogue (${(e as Error).message})`, { cause: e });
  }
  const r = Catalog.safeParse(json);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    throw new Error(`${file}: ${issue.path.join('.')}: ${issue.message}`);
  }
  return [...r.data.assets].sort((a, b) => (a.symbol < b.symbol ? -1 : a.symbol > b.symbol ? 1 : 0));
}
