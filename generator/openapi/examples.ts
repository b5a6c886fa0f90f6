/**
 * One example response per operation (decision 25), taken from the tree being built, so the document shows
 * what the API answers today: the free tier's first asset, a short history page, a bulk call naming a symbol
 * that is not served.
 */
import { bulkBody, historyPage, PLAN_LIMITS, TREE, type RiskDoc } from '../contract/index.js';
import { plainRows, type PlannedLedger } from '../contract/ledger-rows.js';
import type { Examples } from './document.js';

type Doc = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export function operationExamples(files: Map<string, unknown>, info: object): Examples {
  const get = (path: string) => files.get(path) as Doc | undefined;
  const list = get(TREE.assetList('basic'))!;
  const symbols: string[] = list.data.assets.map((a: { symbol: string }) => a.symbol);
  const first = symbols[0]!;
  const dcaSymbol = symbols.find((s) => files.has(TREE.dcaSignal(s)));
  const history = get(TREE.historyFull(first)) as PlannedLedger;
  const page = historyPage(history, { limit: 3, maxLimit: PLAN_LIMITS.pro.historyCap });
  const requested = [...symbols.slice(0, 2), 'NOTSERVED'];
  const out: Examples = {
    listAssets: { summary: 'GET /v1/assets with a basic key', value: list },
    getAssetRisk: { summary: `GET /v1/assets/${first}/risk`, value: get(TREE.risk(first)) },
    getAssetHistory: {
      summary: `GET /v1/assets/${first}/history?limit=3 with a pro key`,
      // Rows as objects: the example is a part of the document, not a ledger's own file.
      value: { ...page, data: { ...page.data, rows: plainRows(page.data.rows) } },
    },
    getBulkRisk: {
      summary: `GET /v1/bulk/risk?symbols=${requested.join(',')}`,
      value: bulkBody(
        requested,
        requested.map((s) => get(TREE.risk(s)) as RiskDoc | undefined),
      ),
    },
    getUniverseSummary: { summary: 'GET /v1/market/crypto/summary', value: get(TREE.summary('crypto')) },
    getHealth: { summary: 'GET /v1/health', value: get(TREE.health) },
    getOpenApi: { summary: 'GET /v1/openapi.json (its opening members only)', value: { openapi: '3.1.0', info } },
  };
  if (dcaSymbol) out.getDcaSignal = { summary: `GET /v1/signals/dca/${dcaSymbol}`, value: get(TREE.dcaSignal(dcaSymbol)) };
  return out;
}
