/** The catalogue of assets the API serves, validated on load: a bad entry names the file, the field and the value. */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { defaultCatalogPath } from '../paths.js';

import { MAX_ASSETS, MODEL_KEYS, SYMBOL_NAME, SYMBOL_RULE, UNIVERSES } from '../contract/constants.js';

export { UNIVERSES, type Universe } from '../contract/constants.js';

const Asset = z.object({
  // A symbol is a name, never a path (decision 101): the tree writes `assets/<SYMBOL>/`, so `..` is refused here.
  symbol: z.string().regex(SYMBOL_NAME, `a symbol is ${SYMBOL_RULE}`),
  name: z.string().min(1),
  asset_class: z.enum(['CRYPTO', 'EQUITY']),
  universes: z.array(z.enum(UNIVERSES)).min(1),
  file_id: z.string().regex(/^[A-Za-z0-9_.-]+$/),
  models: z.array(z.enum(MODEL_KEYS)),
  data_paused_since: z.string().optional(),
});
export type Asset = z.infer<typeof Asset>;

const Catalog = z.object({ assets: z.array(Asset).min(1).max(MAX_ASSETS) }).superRefine((c, ctx) => {
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
    const at = issue.path.reduce<unknown>((v, k) => (v as Record<PropertyKey, unknown> | undefined)?.[k as PropertyKey], json);
    const found = at === undefined || typeof at === 'object' ? '' : ` (found ${JSON.stringify(at)})`;
    throw new Error(`${file}: ${issue.path.join('.')}: ${issue.message}${found}`);
  }
  return [...r.data.assets].sort((a, b) => (a.symbol < b.symbol ? -1 : a.symbol > b.symbol ? 1 : 0));
}
