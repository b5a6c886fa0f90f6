/** The one pure function that cuts a history page from a ledger: the build and the shim share it. */

import type { HistoryLedger, HistoryResponse } from './shapes.js';
import { dateAt, firstRows, plainRows, type PlannedLedger, type Rows } from './ledger-rows.js';

export type { HistoryRow } from './shapes.js';
/** A history ledger: `assets/<symbol>/history/full.json`. */
export type Ledger = HistoryLedger;

export interface PageQuery {
  limit: number;
  maxLimit: number;
  cursor?: string;
  from?: string;
  to?: string;
}

/**
 * One page of history, oldest first: `from`/`to` inclusive, `cursor` exclusive (decision 4). Pure: the shim cuts
 * pages with it. The build cuts its first pages from ledgers whose carried rows stay unparsed (LedgerRows).
 */
export function historyPage(l: Ledger, q: PageQuery): HistoryPage<Ledger['data']['rows']>;
export function historyPage(l: PlannedLedger, q: PageQuery): HistoryPage<Rows>;
export function historyPage(l: PlannedLedger, q: PageQuery): HistoryPage<Rows> {
  const window =
    q.from || q.to ? plainRows(l.data.rows).filter((r) => (!q.from || r.date >= q.from) && (!q.to || r.date <= q.to)) : l.data.rows;
  const matching = q.cursor ? plainRows(window).filter((r) => r.date > q.cursor!) : window;
  const rows = firstRows(matching, q.limit);
  const more = matching.length > rows.length;
  const last = rows.length ? dateAt(rows, rows.length - 1) : null;
  return {
    as_of: l.as_of,
    model_version: l.model_version,
    disclaimer: l.disclaimer,
    data: {
      symbol: l.data.symbol,
      cadence: l.data.cadence,
      from: rows.length ? dateAt(rows, 0) : null,
      through: last,
      row_count: rows.length,
      // Rows in the from/to window across all pages, so a client knows how far the cursor walk goes.
      total_row_count: window.length,
      limit: q.limit,
      max_limit: q.maxLimit,
      next_cursor: more ? last : null,
      rows,
    },
  };
}

/** A HistoryResponse whose rows are `R`. */
export type HistoryPage<R> = Omit<HistoryResponse, 'data'> & { data: Omit<HistoryResponse['data'], 'rows'> & { rows: R } };
