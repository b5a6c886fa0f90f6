/** The one pure function that cuts a history page from a ledger: the build and the shim share it. */

import type { HistoryLedger, HistoryResponse } from './shapes.js';

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

/** One page of history, oldest first: `from`/`to` inclusive, `cursor` exclusive (decision 4). The build and the shim cut pages with it. */
export function historyPage(l: Ledger, q: PageQuery): HistoryResponse {
  const window = q.from || q.to ? l.data.rows.filter((r) => (!q.from || r.date >= q.from) && (!q.to || r.date <= q.to)) : l.data.rows;
  const matching = q.cursor ? window.filter((r) => r.date > q.cursor!) : window;
  const rows = matching.slice(0, q.limit);
  const more = matching.length > rows.length;
  const last = rows.at(-1)?.date ?? null;
  return {
    as_of: l.as_of,
    model_version: l.model_version,
    disclaimer: l.disclaimer,
    data: {
      symbol: l.data.symbol,
      cadence: l.data.cadence,
      from: rows[0]?.date ?? null,
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
