/**
 * One example response per operation (decision 25), taken from the tree being built, so the document shows
 * what the API answers today: the free tier's first asset, a short history page, a bulk call naming a symbol
 * that is not served, the first events of the latest refresh that raised any, a basic key's standing in the month
 * the tree was built.
 */
import {
  bulkBody,
  changesPage,
  historyPage,
  PLAN_LIMITS,
  TREE,
  usageBody,
  type ChangeLedger,
  type Ledger,
  type RiskDoc,
} from '../contract/index.js';
import type { Examples } from './document.js';

type Doc = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export function operationExamples(files: Map<string, unknown>, info: object): Examples {
  const get = (path: string) => files.get(path) as Doc | undefined;
  const list = get(TREE.assetList('basic'))!;
  const symbols: string[] = list.data.assets.map((a: { symbol: string }) => a.symbol);
  // With no free tier (no ranking read yet) the examples quote the first asset any plan may read.
  const first = symbols[0] ?? (get(TREE.assetList('ultra'))!.data.assets[0] as { symbol: string }).symbol;
  const dcaSymbol = symbols.find((s) => files.has(TREE.dcaSignal(s)));
  const history = get(TREE.historyFull(first)) as Ledger;
  const page = historyPage(history, { limit: 3, maxLimit: PLAN_LIMITS.pro.historyCap });
  const requested = [...new Set([first, ...symbols.slice(0, 2)])].slice(0, 2).concat('NOTSERVED');
  const feed = get(TREE.changes) as ChangeLedger;
  const day = feed.events.at(-1)?.published_at.slice(0, 10);
  const window = day ? `from=${day}&to=${day}&` : '';
  const out: Examples = {
    listAssets: { summary: 'GET /v1/assets with a basic key', value: list },
    getAssetRisk: { summary: `GET /v1/assets/${first}/risk`, value: get(TREE.risk(first)) },
    getAssetHistory: { summary: `GET /v1/assets/${first}/history?limit=3 with a pro key`, value: page },
    getBulkRisk: {
      summary: `GET /v1/bulk/risk?symbols=${requested.join(',')}`,
      value: bulkBody(
        requested,
        requested.map((s) => get(TREE.risk(s)) as RiskDoc | undefined),
      ),
    },
    getChanges: {
      summary: `GET /v1/changes?${window}limit=3 with a pro key`,
      value: changesPage(feed, { limit: 3, maxLimit: PLAN_LIMITS.pro.historyCap, from: day, to: day }, 'all'),
    },
    getUniverseSummary: { summary: 'GET /v1/market/crypto/summary', value: get(TREE.summary('crypto')) },
    getHealth: { summary: 'GET /v1/health', value: get(TREE.health) },
    getOpenApi: { summary: 'GET /v1/openapi.json (its opening members only)', value: { openapi: '3.1.0', info } },
    getUsage: { summary: 'GET /v1/usage with a basic key', value: usageExample(get(TREE.health)!.built_at as string) },
  };
  if (dcaSymbol) out.getDcaSignal = { summary: `GET /v1/signals/dca/${dcaSymbol}`, value: get(TREE.dcaSignal(dcaSymbol)) };
  return out;
}

/** A basic key's standing in the month the tree was built: one call in the minute, part of the month used. */
function usageExample(builtAt: string) {
  const at = new Date(builtAt);
  const [start, end] = [0, 1].map((n) => Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + n, 1)) as [number, number];
  return usageBody(
    { plan: 'basic', credential: 'key:1a2b3c4d', label: 'Acme Corp', expires: null },
    { minuteUsed: 1, resetMs: 60_000, monthUsed: 42, monthStart: start, monthEnd: end },
  );
}
