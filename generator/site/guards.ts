/**
 * Checks on what a page says beyond its own markup (decision 27's guards), made where the catalogue and `--now`
 * are known: a page is the asset its file name says, and no reading is dated after `--now` by more than a day, or
 * before 2000.
 * A page that fails one is treated like a page that cannot be read: the build fails, or carries its previous
 * reading forward under --keep-going.
 */
import type { Asset } from '../catalog/catalog.js';
import type { PageRef } from './discover.js';
import type { PageResult } from './readings.js';

export interface GuardProblem {
  field: string;
  found: string;
  message: string;
}

const DAY_MS = 86_400_000;
/** No model the site publishes reads anything before this: a reading dated earlier is a broken stamp, never data. */
const EARLIEST = Date.UTC(2000, 0, 1);
const upper = (s: string) => s.toUpperCase();

interface CatalogIndex {
  bySymbol: Map<string, Asset>;
  byName: Map<string, Asset>;
}

/** The asset a page names, if it names another than its file name's: `ETH (Ethereum)`. */
function otherAsset(result: PageResult, asset: Asset, { bySymbol, byName }: CatalogIndex): string | null {
  const mine = new Set([upper(asset.symbol), upper(asset.file_id)]);
  for (const s of result.identity?.symbols ?? []) {
    if (mine.has(upper(s))) continue;
    const named = bySymbol.get(upper(s));
    const names = result.identity?.names ?? [];
    return named ? `${named.symbol} (${named.name})` : names.length ? `${s} (${names.join(', ')})` : s;
  }
  // Display names vary in wording, so a name counts against the page only when it is another asset's name.
  for (const n of result.identity?.names ?? []) {
    const named = byName.get(upper(n));
    if (named && named.symbol !== asset.symbol && upper(n) !== upper(asset.name)) return `${named.symbol} (${named.name})`;
  }
  return null;
}

/**
 * Every date a page's readings carry, with the field it came from and how far past `--now` it may run: a day
 * for daily readings; a week for weekly bars (phase, the equity composite), which the site labels by the end of
 * the week in progress.
 */
function datesOf(r: PageResult): [string, string, number][] {
  const out: [string, string, number][] = [];
  const add = (field: string, v: { as_of: string | null } | undefined, days = 1) => v?.as_of && out.push([field, v.as_of, days]);
  add('gravity.as_of', r.gravity);
  add('twap.as_of', r.twap);
  add('twap.as_of', r.twap_risk);
  add('sma_composite.as_of', r.sma_composite, r.sma_composite?.as_of_basis === 'trace_end' ? 7 : 1);
  add('phase.as_of', r.phase, 7);
  add('dca.as_of', r.dca);
  add('fear_greed.as_of', r.fear_greed);
  add('peak_valley.as_of', r.peak_valley);
  if (r.price) out.push(['price (last point of the price series)', r.price.date, 1]);
  for (const [u, s] of Object.entries(r.sectors ?? {})) add(`${u}.as_of`, s.fear_greed);
  return out;
}

/** A date (midnight) or an ISO minute as milliseconds. */
const instantOf = (s: string) => Date.parse(s.length === 10 ? `${s}T00:00:00Z` : s);

/** The guards for one build: the catalogue indexed once, then one call per page. */
export function pageGuard(catalog: Asset[], now: string): (result: PageResult, ref: PageRef) => GuardProblem | null {
  const index: CatalogIndex = {
    bySymbol: new Map(
      catalog.flatMap(
        (a) =>
          [
            [upper(a.symbol), a],
            [upper(a.file_id), a],
          ] as const,
      ),
    ),
    byName: new Map(catalog.map((a) => [upper(a.name), a])),
  };
  const bySymbol = new Map(catalog.map((a) => [a.symbol, a]));
  return (result, ref) => guardPage(result, ref, ref.symbol ? bySymbol.get(ref.symbol)! : null, index, now);
}

function guardPage(result: PageResult, ref: PageRef, asset: Asset | null, index: CatalogIndex, now: string): GuardProblem | null {
  if (asset) {
    const other = otherAsset(result, asset, index);
    if (other) {
      const found = `the page names ${other}, not ${asset.symbol} (${asset.name}) as its file name says`;
      return { field: '(asset)', found, message: `${ref.file}: (asset): ${found}` };
    }
  }
  for (const [field, date, days] of datesOf(result)) {
    if (instantOf(date) > Date.parse(now) + days * DAY_MS) {
      const found = `dated ${date}, more than ${days === 1 ? 'one day' : `${days} days`} after --now (${now})`;
      return { field, found, message: `${ref.file}: ${field}: ${found}` };
    }
    if (instantOf(date) < EARLIEST) {
      const found = `dated ${date}, before 2000: no reading the site publishes is that old (a stamp at the epoch?)`;
      return { field, found, message: `${ref.file}: ${field}: ${found}` };
    }
  }
  return null;
}
