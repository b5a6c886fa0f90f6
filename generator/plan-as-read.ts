/**
 * Plans each asset's documents as soon as its pages are read, so that the build writes and compresses them on
 * the other core while it parses the rest. The market pages are read first (every asset needs their readings);
 * assets are planned one at a time in catalogue order, whatever order their pages finish in, so the plan, its
 * warnings and its errors are the same as planning them all at the end.
 */
import type { AssetPages, AssetRisk } from './api/asset-risk.js';
import type { PublishedRows } from './api/history.js';
import type { Asset } from './catalog/catalog.js';
import { marketReadings } from './market-readings.js';
import { planAsset, type AssetPlan } from './plan-tree.js';
import type { PageRef } from './site/discover.js';
import type { PageRead } from './site/read-site.js';
import type { PageKind, PageResult } from './site/readings.js';

/** The key of the market pages among the failed kinds. */
const MARKET = '(market)';
const keyOf = (symbol: string | null) => symbol ?? MARKET;

export interface PlannerInputs {
  catalog: Asset[];
  /** Every page found, in the order they are read: market pages first. */
  pages: PageRef[];
  /** Pages that vanished since the previous build (--keep-going): their kinds keep the previous readings. */
  vanished: { symbol: string | null; kind: PageKind }[];
  ledgers: ReadonlyMap<string, PublishedRows | undefined>;
  previousRisk: (symbol: string) => Promise<AssetRisk | undefined>;
  /** Where the market readings' warnings go. */
  warnings: string[];
  /** Receives each asset's documents, in catalogue order. */
  emit: (path: string, doc: unknown) => void;
}

export type Market = Awaited<ReturnType<typeof marketReadings>>;

export class AssetPlanner {
  /** Pages still to be read, per asset and for the market. */
  private readonly left = new Map<string, number>();
  private readonly readings = new Map<string, AssetPages>();
  private readonly marketResults: PageResult[] = [];
  private readonly failedKinds = new Map<string, Set<PageKind>>();
  /** The next asset of the catalogue to plan. */
  private next = 0;
  private planning = false;
  private stopped = false;
  private market: Promise<Market> | undefined;
  private chain: Promise<void> = Promise.resolve();
  private failure: { error: unknown } | null = null;
  private readonly plans = new Map<string, AssetPlan>();
  /** The assets' warnings, in catalogue order. */
  private readonly warnings: string[] = [];

  constructor(private readonly i: PlannerInputs) {
    for (const p of i.pages) this.left.set(keyOf(p.symbol), (this.left.get(keyOf(p.symbol)) ?? 0) + 1);
    for (const v of i.vanished) this.fail(v.symbol, v.kind);
  }

  private fail(symbol: string | null, kind: PageKind): void {
    const key = keyOf(symbol);
    if (!this.failedKinds.has(key)) this.failedKinds.set(key, new Set());
    this.failedKinds.get(key)!.add(kind);
  }

  /** One page read (readSite's onRead). */
  read({ ref, result }: PageRead): void {
    const key = keyOf(ref.symbol);
    this.left.set(key, this.left.get(key)! - 1);
    if (!result) this.fail(ref.symbol, ref.kind);
    else if (ref.symbol === null) this.marketResults.push(result);
    else {
      if (!this.readings.has(key)) this.readings.set(key, {});
      this.readings.get(key)![ref.kind] = result;
    }
    this.pump();
  }

  /**
   * Plans from now on. Until then readings only accumulate: a build that may turn out idle (no page changed)
   * plans nothing it would throw away.
   */
  start(): void {
    this.planning = true;
    this.pump();
  }

  /** Whether planning has started: a build that never started it read nothing new. */
  get started(): boolean {
    return this.planning;
  }

  /** Plans nothing more: the build is failing anyway. */
  stop(): void {
    this.stopped = true;
  }

  private pump(): void {
    if (!this.planning || this.stopped || this.failure || (this.left.get(MARKET) ?? 0) > 0) return;
    if (!this.market) {
      this.market = marketReadings(
        this.marketResults,
        this.failedKinds.get(MARKET) ?? new Set(),
        this.i.catalog,
        this.i.previousRisk,
        this.i.warnings,
      );
      // Awaited by each asset's plan and by finish; a failure surfaces there, never as an unhandled rejection.
      this.market.catch(() => {});
    }
    const market = this.market;
    const { catalog } = this.i;
    while (this.next < catalog.length && (this.left.get(catalog[this.next]!.symbol) ?? 0) === 0) {
      const asset = catalog[this.next++]!;
      this.chain = this.chain.then(async () => {
        if (this.failure || this.stopped) return;
        try {
          this.plan(asset, await market, await this.previousRisk(asset.symbol));
        } catch (error) {
          this.failure = { error };
        }
      });
    }
  }

  /** The previous AssetRisk of an asset whose pages failed: its readings are carried. */
  private previousRisk(symbol: string): Promise<AssetRisk | undefined> {
    return this.failedKinds.has(symbol) ? this.i.previousRisk(symbol) : Promise.resolve(undefined);
  }

  private plan(asset: Asset, market: Market, previousRisk: AssetRisk | undefined): void {
    const plan = planAsset({
      asset,
      pages: this.readings.get(asset.symbol) ?? {},
      failedKinds: this.failedKinds.get(asset.symbol) ?? new Set(),
      previousRisk,
      ledger: this.i.ledgers.get(asset.symbol),
      market,
    });
    this.plans.set(asset.symbol, plan);
    for (const [path, doc] of plan.files) this.i.emit(path, doc);
    if (plan.warning) this.warnings.push(plan.warning);
  }

  /** Once every page is read: plans the assets left, and gives every plan, the market readings and the warnings. */
  async finish(): Promise<{ plans: Map<string, AssetPlan>; market: Market; warnings: string[] }> {
    this.start();
    await this.chain;
    if (this.failure) throw this.failure.error;
    return { plans: this.plans, market: await this.market!, warnings: this.warnings };
  }
}
