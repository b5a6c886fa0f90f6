/** Paths of the files in `v1/`, in one place: the build writes them, `check` and the shim find them here. */
import type { Plan } from './plans.js';

export const TREE = {
  openapi: 'openapi.json',
  health: 'health.json',
  catalog: '_catalog.json',
  manifest: '_manifest.json',
  assetList: (plan: Plan) => `assets/index.${plan}.json`,
  risk: (symbol: string) => `assets/${symbol}/risk.json`,
  historyFull: (symbol: string) => `assets/${symbol}/history/full.json`,
  historyPage: (symbol: string, limit: number) => `assets/${symbol}/history/page-${limit}.json`,
  dcaSignal: (symbol: string) => `signals/dca/${symbol}.json`,
  summary: (universe: string) => `market/${universe}/summary.json`,
  changes: 'changes/ledger.json',
} as const;

const LEDGER = /^assets\/[^/]+\/history\/full\.json$/;
/** A ledger (an asset's history, the change feed): read whole by the build and cut by the shim, never sent as it is. */
export const isLedger = (path: string): boolean => LEDGER.test(path) || path === TREE.changes;

/** Which schema each file of the tree answers to. */
export const SCHEMA_OF: [RegExp, string][] = [
  [/^assets\/[^/]+\/risk\.json$/, 'AssetRiskResponse'],
  [/^assets\/[^/]+\/history\/page-\d+\.json$/, 'HistoryResponse'],
  [LEDGER, 'x-internal-HistoryLedger'],
  [/^changes\/ledger\.json$/, 'x-internal-ChangeLedger'],
  [/^assets\/index\.(basic|pro|ultra)\.json$/, 'AssetListResponse'],
  [/^signals\/dca\/[^/]+\.json$/, 'DcaSignalResponse'],
  [/^market\/[^/]+\/summary\.json$/, 'SummaryResponse'],
  [/^health\.json$/, 'Health'],
  [/^openapi\.json$/, 'x-internal-OpenApi'],
  [/^_catalog\.json$/, 'x-internal-Catalog'],
  [/^_manifest\.json$/, 'x-internal-Manifest'],
];
