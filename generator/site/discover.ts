/** Maps the files of a pages folder onto catalogue assets and page kinds (site-format section 2). */
import { lstatSync, realpathSync } from 'node:fs';
import { join, sep } from 'node:path';
import fg from 'fast-glob';
import type { Asset, ModelKey } from '../catalog/catalog.js';
import type { PageKind } from './readings.js';
import { WIDGET_UNIVERSE } from './pages/market.js';

export interface PageRef {
  file: string;
  kind: PageKind;
  symbol: string | null;
}

export interface Discovery {
  pages: PageRef[];
  /** Expected asset pages that are absent: the model reads null, with a warning. */
  missing: { symbol: string; kind: PageKind; file: string }[];
  /** Files that are not a source the catalogue asks for (other page families, unknown assets, unlisted models). */
  ignored: string[];
  /** Links in the folder whose target lies outside it: never read, so the build reads only what the folder holds. */
  outside: { file: string; target: string }[];
}

export const MARKET_PAGES: Record<string, PageKind> = {
  'BTC_Unified_FNG_Matrix.html': 'crypto_fear_greed',
  'crypto_risk_normalized.html': 'crypto_peak_valley',
  'Crypto_Story_Galaxy.html': 'market_cap_ranking',
  'sector_feed.json': 'sector_feed',
  ...Object.fromEntries(Object.keys(WIDGET_UNIVERSE).map((f) => [f, 'sector_widget' as const])),
};

/** Which page kinds feed which model of an asset. */
export const KIND_MODEL: Partial<Record<PageKind, ModelKey>> = {
  crypto_gravity: 'gravity',
  crypto_twap_risk: 'twap',
  crypto_sma_20w: 'sma_composite',
  crypto_phase: 'phase',
  equity_twap: 'gravity',
  equity_sma_composite: 'sma_composite',
  equity_valuation: 'phase',
  dca_regression: 'dca',
};

/** The file names an asset's models are published under, as the site spells them. */
export function expectedPages(
  a: Pick<Asset, 'file_id' | 'asset_class'> & { models: readonly string[] },
): { kind: PageKind; names: string[] }[] {
  const id = a.file_id;
  const has = (m: ModelKey) => a.models.includes(m);
  const out: { kind: PageKind; names: string[] }[] = [];
  if (a.asset_class === 'CRYPTO') {
    if (has('gravity') || has('twap')) out.push({ kind: 'crypto_gravity', names: [`${id}_Price_TWAP_Gravity_Analysis.html`] });
    if (has('twap')) out.push({ kind: 'crypto_twap_risk', names: [`${id}_Price_TWAP_Risk_Analysis.html`] });
    if (has('sma_composite')) out.push({ kind: 'crypto_sma_20w', names: [`${id.toLowerCase()}-usd_price_with_risk.html`] });
    if (has('phase')) out.push({ kind: 'crypto_phase', names: [`${id}_Polynomial_Phase_Detector.html`] });
  } else {
    if (has('gravity') || has('twap')) out.push({ kind: 'equity_twap', names: [`${id}_Equities_TWAP.html`] });
    if (has('sma_composite')) out.push({ kind: 'equity_sma_composite', names: [`${id}_Composite_SMA_Risk.html`] });
    if (has('phase')) out.push({ kind: 'equity_valuation', names: [`${id}_Equities_Valuation.html`] });
  }
  if (has('dca'))
    out.push({ kind: 'dca_regression', names: [`${id}_lin_reg_price_with_risk.html`, `${id.toLowerCase()}_lin_reg_price_with_risk.html`] });
  return out;
}

/** Classify a list of file names (base names in one folder). */
export function classify(files: string[], catalog: Asset[]): Discovery {
  const present = new Set(files);
  const used = new Set<string>();
  const pages: PageRef[] = [];
  const missing: Discovery['missing'] = [];
  for (const a of catalog) {
    for (const { kind, names } of expectedPages(a)) {
      const file = names.find((n) => present.has(n));
      if (file) {
        pages.push({ file, kind, symbol: a.symbol });
        used.add(file);
      } else missing.push({ symbol: a.symbol, kind, file: names[0]! });
    }
  }
  for (const f of files) {
    const kind = MARKET_PAGES[f];
    if (kind) {
      pages.push({ file: f, kind, symbol: null });
      used.add(f);
    }
  }
  const ignored = files.filter((f) => !used.has(f) && (f.endsWith('.html') || f.endsWith('.json')) && f !== 'catalog.json').sort();
  pages.sort((x, y) => (x.file < y.file ? -1 : x.file > y.file ? 1 : 0));
  return { pages, missing, ignored, outside: [] };
}

export async function discover(dir: string, catalog: Asset[]): Promise<Discovery> {
  const files = await fg(['*.html', '*.json'], { cwd: dir, onlyFiles: true, caseSensitiveMatch: true, dot: false });
  const root = realpathSync(dir);
  const outside: Discovery['outside'] = [];
  const inside = files.filter((f) => {
    const path = join(dir, f);
    if (!lstatSync(path).isSymbolicLink()) return true;
    let target: string;
    try {
      target = realpathSync(path);
    } catch {
      target = '(nothing: a broken link)';
    }
    if (target.startsWith(root + sep)) return true;
    outside.push({ file: f, target });
    return false;
  });
  return { ...classify(inside, catalog), outside };
}
