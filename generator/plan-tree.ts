/**
 * The build's pure core: from what the build read (the pages' readings, the previous tree's ledgers and the
 * readings it carries for pages that failed under --keep-going) and the catalogue, to every document of the new
 * tree. No I/O and no clock: the same inputs give the same documents; read-inputs.ts reads before it and
 * output/publish-tree.ts publishes after it.
 */
import { assembleAssetRisk, nulledReadings, riskExtraModels, riskReadings, type AssetReadings, type AssetRisk } from './api/asset-risk.js';
import { assetList } from './api/asset-list.js';
import { addRisk, emptyState, nextLedger, type ChangeLedger, type PreviousFeed } from './api/changes.js';
import type { PreviousFeedRead, ReadInputs } from './build-inputs.js';
import { dcaSignal } from './api/dca-signal.js';
import { envelope, modelVersion, newest } from './api/envelope.js';
import { health } from './api/health.js';
import { archiveRows, historyPage, HistoryLossError, ledger, mergeRows, publishedRow, type HistoryRow } from './api/history.js';
import { marketReadings, type MarketReadings } from './market-readings.js';
import { contextReadings } from './api/market-context.js';
import { UNIVERSES, type Asset } from './catalog/catalog.js';
import { PLANS, PRECOMPUTED_PAGES } from './contract/plans.js';
import type { Catalog } from './contract/shapes.js';
import { TREE } from './contract/tree.js';
import { universeSummary } from './api/summary.js';
import { servedDocument, type ApiInfo } from './openapi/document.js';
import { operationExamples } from './openapi/examples.js';
import type { Carried } from './site/carry.js';
import type { PageResult } from './site/readings.js';
import { readingsOf, type PageKind } from './site/registry.js';

/** What the plan is made from: what the read step gave (build-inputs.ts) and the build's own settings. */
export type TreeInputs = ReadInputs & {
  builtAt: string;
  renderVersion: string;
  publicUrl?: string;
  /** The operator's contact, licence and terms for the served document (`--api-info`). */
  apiInfo?: ApiInfo;
  /** `info` of the closed document, for the examples' summaries. */
  info: object;
};

export interface PlannedTree {
  /** Every document of the tree but the manifest, by path. */
  objects: Map<string, unknown>;
  /** Each asset's new ledger rows, for the invariant checked before publishing (checkLedgerKept). */
  ledgers: Map<string, HistoryRow[]>;
  /** The change feed's new ledger, for its invariant (checkFeedKept). */
  feed: ChangeLedger;
  warnings: string[];
  /** Where each equity universe's sector indicators came from, for the report. */
  sectorSources: Record<string, string | null>;
}

/** The market-wide readings every asset's files need. */
type MarketWide = Pick<MarketReadings, 'contexts' | 'ranks' | 'freeTier'>;

/** What one asset's files are planned from. */
interface AssetInputs {
  asset: Asset;
  /** The readings of the asset's pages that were read. */
  pages: PageResult[];
  /** The previous tree's part of each reading of its pages that failed (read nothing). */
  carried: Carried;
  /** The rows of its published ledger, undefined where it has none yet. */
  ledger: readonly HistoryRow[] | undefined;
  market: MarketWide;
}

interface AssetPlan {
  risk: AssetRisk;
  /** The asset's entry in the shim's catalogue. */
  entry: Catalog['assets'][string];
  /** Its documents (risk, DCA signal, ledger, precomputed history pages), by path. */
  files: [string, unknown][];
  /** Its ledger's rows. */
  rows: HistoryRow[];
  warning?: string;
}

/** One asset's documents. */
function planAsset({ asset, pages, carried, ledger: previousLedger, market }: AssetInputs): AssetPlan {
  // Each reading comes from one page of the asset (a kind's readings are its own); a failed page's are carried.
  const read: AssetReadings = Object.assign({}, ...pages.map(({ file: _f, kind: _k, symbol: _s, archive: _a, identity: _i, ...r }) => r));
  const risk = assembleAssetRisk(asset, read, carried, {
    freeTier: new Set(market.freeTier),
    ranks: market.ranks,
    context: market.contexts[asset.universes[0]!]!,
  });
  const files: [string, unknown][] = [
    [TREE.risk(asset.symbol), envelope(risk, [...riskReadings(risk), ...contextReadings(risk.market_context)], riskExtraModels(risk))],
  ];
  const signal = dcaSignal(risk);
  if (signal) files.push([TREE.dcaSignal(asset.symbol), signal]);

  const today = publishedRow(risk);
  const archives = pages.flatMap((p) => (p.archive ? [p.archive] : []));
  const merged = mergeRows(asset.symbol, previousLedger, today, () => archiveRows(archives, today!.date));
  const full = ledger(asset.symbol, merged.rows, risk.as_of, modelVersion(riskReadings(risk), riskExtraModels(risk)));
  files.push([TREE.historyFull(asset.symbol), full]);
  for (const page of PRECOMPUTED_PAGES) files.push([TREE.historyPage(asset.symbol, page.limit), historyPage(full, page)]);
  const entry = { asset_class: asset.asset_class, universes: [...asset.universes], free_tier: risk.free_tier, dca_signal: !!signal };
  return { risk, entry, files, rows: merged.rows, warning: merged.warning };
}

/** A published history must not vanish with its asset: throws HistoryLossError for a published asset the catalogue drops. */
function checkNoAssetDropped(catalog: Asset[], previousAssets: string[]): void {
  const symbols = new Set(catalog.map((a) => a.symbol));
  for (const s of previousAssets) if (!symbols.has(s)) throw new HistoryLossError(`${s} has published history but is not in the catalogue`);
}

/** What the documents across assets are planned from, besides each asset's plan. */
type MarketWideInputs = Pick<TreeInputs, 'catalog' | 'pages' | 'builtAt' | 'renderVersion' | 'publicUrl' | 'apiInfo' | 'info'> & {
  market: MarketWide;
};

/**
 * The documents across assets (asset lists, universe summaries, health, the served contract, the shim's
 * catalogue), by path, from every asset's plan; `assetFiles` holds the assets' documents (the contract's examples
 * quote them).
 */
function planMarketWide(
  i: MarketWideInputs,
  plans: ReadonlyMap<string, AssetPlan>,
  assetFiles: ReadonlyMap<string, unknown>,
): Map<string, unknown> {
  const objects = new Map<string, unknown>();
  const risks = new Map([...plans].map(([s, p]) => [s, p.risk]));
  const pagesOf = groupBy(
    i.pages,
    (p) => p.symbol,
    (p) => p.kind,
  );
  const pageFiles = new Map([...pagesOf].map(([s, kinds]) => [s, Object.fromEntries([...kinds].map(([k, ref]) => [k, ref.file]))]));
  for (const plan of PLANS) objects.set(TREE.assetList(plan), assetList(plan, i.catalog, risks, pageFiles, i.market.freeTier));
  const universes: Record<string, string[]> = {};
  for (const u of UNIVERSES) {
    const members = i.catalog.filter((a) => a.universes.includes(u));
    universes[u] = members.map((a) => a.symbol);
    objects.set(
      TREE.summary(u),
      universeSummary(
        u,
        members.map((a) => risks.get(a.symbol)!),
        i.market.contexts[u]!,
      ),
    );
  }
  objects.set(TREE.health, health(i.renderVersion, i.builtAt, newest([...risks.values()].map((r) => r.as_of))));
  const quoted = new Map([...assetFiles, ...objects]);
  objects.set(TREE.openapi, servedDocument({ servers: i.publicUrl, examples: operationExamples(quoted, i.info), info: i.apiInfo }));
  const shimCatalog: Catalog = {
    schema: 1,
    universes,
    free_tier: i.market.freeTier,
    index: Object.fromEntries(i.catalog.map((a) => [a.symbol.toUpperCase(), a.symbol])),
    assets: Object.fromEntries(i.catalog.map((a) => [a.symbol, plans.get(a.symbol)!.entry])),
  };
  objects.set(TREE.catalog, shimCatalog);
  return objects;
}

/** Every document of the tree. Throws HistoryLossError for a published asset the catalogue drops. */
export function planTree(i: TreeInputs): PlannedTree {
  checkNoAssetDropped(i.catalog, i.previous.assets);
  const warnings: string[] = [];
  const previousState = i.previous.feed && previousFeed(i.previous.feed, warnings);
  const marketPages = i.results.filter((r) => r.symbol === null);
  const market = marketReadings(marketPages, readingsOf(i.failedMarket), i.catalog, i.previous.risks, warnings);
  const resultsBySymbol = new Map<string, PageResult[]>();
  for (const r of i.results) if (r.symbol) resultsBySymbol.set(r.symbol, [...(resultsBySymbol.get(r.symbol) ?? []), r]);
  const objects = new Map<string, unknown>();
  const plans = new Map<string, AssetPlan>();
  const ledgers = new Map<string, HistoryRow[]>();
  for (const asset of i.catalog) {
    const plan = planAsset({
      asset,
      pages: resultsBySymbol.get(asset.symbol) ?? [],
      carried: i.carried.get(asset.symbol) ?? {},
      ledger: i.previous.ledgers.get(asset.symbol),
      market,
    });
    plans.set(asset.symbol, plan);
    ledgers.set(asset.symbol, plan.rows);
    for (const [path, doc] of plan.files) objects.set(path, doc);
    if (plan.warning) warnings.push(plan.warning);
    const before = i.previous.feed?.risks.get(asset.symbol);
    const nulled = before ? nulledReadings(before, plan.risk) : [];
    if (nulled.length) warnings.push(`${asset.symbol}: null where the previous tree held a value: ${nulled.join(', ')}`);
  }
  const feed = nextLedger(
    previousState,
    [...plans.values()].map((p) => p.risk),
    i.builtAt,
  );
  objects.set(TREE.changes, feed);
  for (const [path, doc] of planMarketWide({ ...i, market }, plans, objects)) objects.set(path, doc);
  return { objects, ledgers, feed, warnings, sectorSources: market.sectorSources };
}

/** Items by symbol, then by kind; items with no symbol (market pages) are left out. The last of a kind wins. */
function groupBy<T>(items: Iterable<T>, symbolOf: (t: T) => string | null, kindOf: (t: T) => PageKind): Map<string, Map<PageKind, T>> {
  const out = new Map<string, Map<PageKind, T>>();
  for (const item of items) {
    const symbol = symbolOf(item);
    if (!symbol) continue;
    if (!out.has(symbol)) out.set(symbol, new Map());
    out.get(symbol)!.set(kindOf(item), item);
  }
  return out;
}

/**
 * The previous tree's tracked state, which this refresh's events are measured from, from its AssetRisk files. A
 * file that is not an AssetRisk this version reads is rewritten like any other; its asset, like one whose file
 * failed the manifest check, raises no event this time, and the warnings say so.
 */
function previousFeed(read: PreviousFeedRead, warnings: string[]): PreviousFeed {
  const unread = new Map(read.unread);
  const state = emptyState();
  for (const [symbol, risk] of read.risks) {
    try {
      addRisk(state, risk);
    } catch (e) {
      if (!(e instanceof TypeError)) throw e;
      unread.set(symbol, `${read.source}: ${TREE.risk(symbol)} is not an AssetRisk this version reads (${e.message})`);
    }
  }
  for (const [symbol, why] of [...unread].sort()) warnings.push(`${why}: ${symbol}'s changes at this refresh are not in the change feed`);
  if (!read.ledger) warnings.push(`${read.source}: the previous tree has no change feed; it starts with this build`);
  return { ledger: read.ledger, state, unread: [...unread.keys()].sort() };
}
