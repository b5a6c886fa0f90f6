/**
 * History: the ledger of rows each build published (as_published), with weekly_archive rows mined from the
 * pages' own series before the first published day. The previous tree is the ledger; no build drops a row.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Archive } from '../site/readings.js';
import type { AssetRisk } from './asset-risk.js';
import { DISCLAIMER } from '../contract/constants.js';
import type { HistoryRow } from '../contract/history-page.js';
import type { Ledger } from '../contract/history-page.js';
import { HistoryRow as HistoryRowShape } from '../contract/shapes.js';

export type { HistoryRow, Ledger } from '../contract/history-page.js';
export { historyPage } from '../contract/history-page.js';

/** A build would drop or rewrite a published history row (exit 1: nothing is published). */
export class HistoryLossError extends Error {}

/** The row's fields in the contract's order (contract/shapes.ts), and the readings among them. */
const ROW_KEYS = Object.keys(HistoryRowShape.shape) as (keyof HistoryRow)[];
const READING_KEYS = ROW_KEYS.filter((k) => k !== 'date' && k !== 'basis');
const NO_READINGS = Object.freeze(Object.fromEntries(READING_KEYS.map((k) => [k, null])));
/** A row of that date and basis before any page has given it a reading (a first build makes one per archived week). */
export const blankRow = (date: string, basis: HistoryRow['basis']): HistoryRow => ({ date, basis, ...NO_READINGS }) as HistoryRow;

/** Today's row: what this build publishes for the asset, dated by the asset's as_of. */
export function publishedRow(r: AssetRisk): HistoryRow | null {
  if (!r.as_of) return null;
  return {
    date: r.as_of.slice(0, 10),
    basis: 'as_published',
    price: r.price.value,
    gravity: r.gravity?.score ?? null,
    sma_composite: r.sma_composite?.score ?? null,
    phase_completion_pct: r.phase?.completion_pct ?? null,
    twap_premium_pct: r.twap?.premium_pct ?? null,
    twap_risk_level: r.twap?.risk_level ?? null,
    dca_premium_pct: r.dca?.premium_pct ?? null,
    dca_risk: r.dca?.risk ?? null,
    dca_band: r.dca?.band ?? null,
  };
}

/** weekly_archive rows strictly before `before`, one per week, from every page's weekly samples. */
export function archiveRows(archives: Archive[], before: string): HistoryRow[] {
  const weeks = new Map<string, HistoryRow>();
  for (const a of archives) {
    for (const [week, values] of Object.entries(a)) {
      if (week >= before) continue;
      let row = weeks.get(week);
      if (!row) weeks.set(week, (row = blankRow(week, 'weekly_archive')));
      Object.assign(row, values);
    }
  }
  return [...weeks.values()].filter((r) => READING_KEYS.some((k) => r[k] !== null)).sort((a, b) => (a.date < b.date ? -1 : 1));
}

/**
 * The new ledger rows: the published ones, plus today's row (replacing a row of the same day that this pipeline
 * published, never an earlier one). checkLedgerKept states the rule these rows must keep.
 */
export function mergeRows(
  symbol: string,
  previous: readonly HistoryRow[] | undefined,
  today: HistoryRow | null,
  archive: () => HistoryRow[],
): { rows: HistoryRow[]; warning?: string } {
  if (!previous?.length) return { rows: today ? [...archive(), today] : [] };
  const last = previous.at(-1)!;
  if (!today) return { rows: [...previous] };
  if (today.date > last.date) return { rows: [...previous, today] };
  if (today.date === last.date && last.basis === 'as_published') return { rows: [...previous.slice(0, -1), today] };
  return {
    rows: [...previous],
    warning: `${symbol}: the readings are dated ${today.date}, not after the last history row (${last.date}); no row added`,
  };
}

/**
 * The ledger's one invariant: no build drops or rewrites a published row. Every row of the previous ledger is in
 * the new one, unchanged and in its place, but its last as_published row, which a later build of the same day
 * replaces. Throws HistoryLossError naming the asset and the row.
 */
export function checkLedgerKept(symbol: string, previous: readonly HistoryRow[], next: readonly HistoryRow[]): void {
  previous.forEach((row, i) => {
    const now = next[i];
    if (now === row || isDeepStrictEqual(now, row)) return;
    const replacedToday = i === previous.length - 1 && row.basis === 'as_published' && now?.date === row.date;
    if (!replacedToday)
      throw new HistoryLossError(
        `${symbol}: row ${i} (${row.date}, ${row.basis}) ${now ? `would become ${now.date} ${now.basis}` : 'would be dropped'}`,
      );
  });
}

function cadence(firstPublished: string | null): string {
  return firstPublished
    ? `Daily as_published rows (one per publication day) from ${firstPublished}; weekly_archive rows, one per week labelled by its closing Sunday, before that date.`
    : 'No published rows yet.';
}

export function ledger(symbol: string, rows: HistoryRow[], as_of: string | null, model_version: Record<string, string> | null): Ledger {
  const first = rows.find((r) => r.basis === 'as_published')?.date ?? null;
  return {
    as_of,
    model_version,
    disclaimer: DISCLAIMER,
    data: { symbol, cadence: cadence(first), first_published: first, total_row_count: rows.length, rows },
  };
}
