/**
 * Checks on what a page says beyond its own markup (decision 27's guards), made where the catalogue, `--now` and the
 * ledgers are known: a page is the asset its file name says, no reading is dated after `--now` by more than a day, or
 * before 2000, and no price moved ten times up or down from the asset's last published one (decision 101).
 * A page that fails one is treated like a page that cannot be read: the build fails, or carries its previous
 * reading forward under --keep-going.
 */
import type { Asset } from '../catalog/catalog.js';
import type { HistoryRow } from '../contract/shapes.js';
import { instant } from '../contract/time.js';
import type { PageRef } from './discover.js';
import { KINDS } from './registry.js';
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
/**
 * How far a price may move from the asset's last published one, either way: ten times. No market the site covers
 * moves that much between two publications; a page printing it has a broken or edited price (decision 101).
 */
const MAX_PRICE_MOVE = 10;

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
 * Every date a page's readings carry, with the field it came from: each reading's `as_of` (the sector indicators'
 * per universe), and the price's date, the last point of its series. Walked, not listed, so that no reading a kind
 * yields escapes the guard (decision 60).
 */
function datedReadings(r: PageResult): [string, string][] {
  const out: [string, string][] = [];
  const walk = (v: unknown, path: string) => {
    if (!v || typeof v !== 'object' || Array.isArray(v)) return;
    const o = v as Record<string, unknown>;
    if (typeof o.as_of === 'string') out.push([`${path}.as_of`, o.as_of]);
    else for (const [k, x] of Object.entries(o)) walk(x, path ? `${path}.${k}` : k);
  };
  for (const [key, value] of Object.entries(r)) {
    if (key === 'archive' || key === 'identity') continue;
    if (key === 'price' && r.price) out.push(['price (last point of the price series)', r.price.date]);
    else walk(value, key);
  }
  return out;
}

/** The last price an asset's ledger published (its newest as_published row with a price), if any. */
function lastPublishedPrice(rows: readonly HistoryRow[] | undefined): { price: number; date: string } | null {
  for (let i = (rows?.length ?? 0) - 1; i >= 0; i--) {
    const r = rows![i]!;
    if (r.basis === 'as_published' && r.price !== null) return { price: r.price, date: r.date };
  }
  return null;
}

/** The page's prices (the asset's, and the DCA page's own), each with the field it is read as. */
function pricesOf(r: PageResult): [string, number][] {
  const out: [string, number][] = [];
  if (typeof r.price?.value === 'number') out.push(['price.value', r.price.value]);
  if (typeof r.dca?.price === 'number') out.push(['dca.price', r.dca.price]);
  return out;
}

/**
 * The guards for one build: the catalogue indexed once, then one call per page. `ledgers` are the previous tree's
 * history rows by symbol, which the price-move guard measures from; without them (or for an asset with no published
 * price yet) that guard has nothing to measure from and passes.
 */
export function pageGuard(
  catalog: Asset[],
  now: string,
  ledgers?: ReadonlyMap<string, readonly HistoryRow[]>,
): (result: PageResult, ref: PageRef) => GuardProblem | null {
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
  return (result, ref) =>
    guardPage(result, ref, ref.symbol ? bySymbol.get(ref.symbol)! : null, index, now) ??
    (ref.symbol ? priceMove(result, ref, lastPublishedPrice(ledgers?.get(ref.symbol))) : null);
}

/** A price ten times up or down from the last published one, named with both and the factor. */
function priceMove(result: PageResult, ref: PageRef, last: { price: number; date: string } | null): GuardProblem | null {
  if (!last || !(last.price > 0)) return null;
  for (const [field, price] of pricesOf(result)) {
    const factor = Math.max(price / last.price, last.price / price);
    if (factor < MAX_PRICE_MOVE) continue;
    const way = price > last.price ? 'up' : 'down';
    const found = `${price} is ${Number(factor.toPrecision(3))} times ${way} from ${ref.symbol}'s last published price (${last.price} on ${last.date}): no market moves ${MAX_PRICE_MOVE} times between two publications`;
    return { field, found, message: `${ref.file}: ${field}: ${found}` };
  }
  return null;
}

function guardPage(result: PageResult, ref: PageRef, asset: Asset | null, index: CatalogIndex, now: string): GuardProblem | null {
  if (asset) {
    const other = otherAsset(result, asset, index);
    if (other) {
      const found = `the page names ${other}, not ${asset.symbol} (${asset.name}) as its file name says`;
      return { field: '(asset)', found, message: `${ref.file}: (asset): ${found}` };
    }
  }
  // A daily page may run a day past --now; a weekly one a week, its bars labelled by the end of the week in progress.
  const days = KINDS[ref.kind].cadence === 'weekly' ? 7 : 1;
  for (const [field, date] of datedReadings(result)) {
    if (instant(date) > Date.parse(now) + days * DAY_MS) {
      const found = `dated ${date}, more than ${days === 1 ? 'one day' : `${days} days`} after --now (${now})`;
      return { field, found, message: `${ref.file}: ${field}: ${found}` };
    }
    if (instant(date) < EARLIEST) {
      const found = `dated ${date}, before 2000: no reading the site publishes is that old (a stamp at the epoch?)`;
      return { field, found, message: `${ref.file}: ${field}: ${found}` };
    }
  }
  return null;
}
