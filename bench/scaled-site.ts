/**
 * A site several times the fixture's, for the build's memory at scale: the catalogue's assets, then copies of each
 * under a new symbol, file id and name (`BTC` becomes `BTC2`, `Bitcoin 2`, ...), which the synthesizer writes pages
 * for like any other asset (each copy's prices drawn from its own symbol's seed), with the catalogue to match.
 */
import type { AssetFacts } from '../fixtures/synth/market.js';

const copy = (a: AssetFacts, k: number): AssetFacts => ({
  ...a,
  symbol: `${a.symbol}${k}`,
  file_id: `${a.file_id}${k}`,
  name: `${a.name} ${k}`,
});

/** The catalogue with `times - 1` copies of each asset; throws if a copy would repeat a symbol, file id or name. */
export function scaledCatalog(catalog: AssetFacts[], times: number): AssetFacts[] {
  const out = [...catalog];
  for (let k = 2; k <= times; k++) for (const a of catalog) out.push(copy(a, k));
  const seen = new Set<string>();
  for (const a of out) {
    for (const key of [`symbol ${a.symbol.toUpperCase()}`, `file id ${a.file_id.toUpperCase()}`, `name ${a.name.toUpperCase()}`]) {
      if (seen.has(key)) throw new Error(`scaledCatalog: ${a.symbol} repeats the ${key}`);
      seen.add(key);
    }
  }
  return out;
}

/** The symbols of `assets` and of their copies in scaledCatalog. */
export const scaledSymbols = (assets: AssetFacts[], times: number): string[] =>
  Array.from({ length: times }, (_, i) => assets.map((a) => (i === 0 ? a.symbol : copy(a, i + 1).symbol))).flat();
