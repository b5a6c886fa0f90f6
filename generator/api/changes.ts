/**
 * The change feed (decision 34). A tree's tracked state (each asset's tracked readings, free-tier and catalogue
 * membership and stale models; each universe's market-context labels) is read from its AssetRisk documents; a
 * refresh's events are the moves between the previous tree's state and the new one's; they are appended to a
 * ledger that, like the history, no build rewrites. `risk-readings diff` reads the same states from two trees.
 */
import { isDeepStrictEqual } from 'node:util';
import { MODEL_KEYS, TRACKED_ASSET_FIELDS, TRACKED_UNIVERSE_FIELDS, UNIVERSES, type ModelKey } from '../contract/constants.js';
import { ChangeEvent, type AssetRisk, type ChangeLedger, type MarketContext } from '../contract/shapes.js';

export type { ChangeEvent, ChangeLedger } from '../contract/shapes.js';

/** What the previous tree gives the feed: its ledger (none before the feed existed) and its tracked state. */
export interface PreviousFeed {
  ledger: ChangeLedger | undefined;
  state: TreeState;
  /** Assets whose previous AssetRisk could not be read intact: they raise no event this refresh. */
  unread: string[];
}

/** A build would drop or rewrite a published event (exit 1: nothing is published). */
export class FeedLossError extends Error {}

type Value = ChangeEvent['from'];
/** A tracked value and the reading it was read from; null where there is no reading. */
type Tracked = { value: Value; model: string | null; as_of: string | null } | null;

type Source = Pick<ChangeEvent, 'model' | 'as_of'>;

interface AssetState {
  as_of: string | null;
  free_tier: boolean;
  stale: readonly string[];
  /** By field (`gravity.risk_level`, ...). */
  tracked: Record<string, Tracked>;
  /** Each AssetRisk reading's model and as_of, by key; null where the asset has none. */
  readings: Record<ModelKey, Source | null>;
}

/** What the feed compares of a tree. */
export interface TreeState {
  assets: Map<string, AssetState>;
  /** By universe, its context's tracked fields. */
  universes: Map<string, Record<string, Tracked>>;
}

const ASSET_FIELDS = Object.entries(TRACKED_ASSET_FIELDS).map(([key, f]) => [key as ModelKey, f, `${key}.${f}`] as const);
const UNIVERSE_FIELDS = Object.entries(TRACKED_UNIVERSE_FIELDS).map(
  ([key, f]) => [key as keyof typeof TRACKED_UNIVERSE_FIELDS, f, `${key}.${f}`] as const,
);

/** The tracked state of a tree, from its assets' AssetRisk; a universe's context is read from any member's. */
export function treeState(risks: Iterable<AssetRisk>): TreeState {
  const state = emptyState();
  for (const r of risks) addRisk(state, r);
  return state;
}

export const emptyState = (): TreeState => ({ assets: new Map(), universes: new Map() });

/** One asset's AssetRisk into a tree's state. */
export function addRisk(state: TreeState, r: AssetRisk): void {
  const tracked: Record<string, Tracked> = {};
  const readings = {} as Record<ModelKey, Source | null>;
  for (const [key, f, field] of ASSET_FIELDS) {
    const reading = r[key] as (Record<string, unknown> & { model: string; as_of: string }) | null;
    if (reading !== null && typeof reading !== 'object') throw new TypeError(`${key} is not a reading`);
    readings[key] = reading ? { model: reading.model, as_of: reading.as_of } : null;
    // The TWAP risk level is a model of its own beside the TWAP reading.
    const model = key === 'twap' ? (r.twap?.risk_level_model ?? r.twap?.model) : reading?.model;
    tracked[field] = reading ? { value: (reading[f] as Value) ?? null, model: model ?? null, as_of: reading.as_of } : null;
  }
  // Everything is read before the state changes: a document of another shape throws and leaves it as it was.
  const u = r.market_context.universe;
  const context = state.universes.has(u) ? undefined : contextState(r.market_context);
  state.assets.set(r.symbol, { as_of: r.as_of, free_tier: r.free_tier, stale: [...r.stale_models], tracked, readings });
  if (context) state.universes.set(u, context);
}

function contextState(c: MarketContext): Record<string, Tracked> {
  const tracked: Record<string, Tracked> = {};
  for (const [key, f, field] of UNIVERSE_FIELDS) {
    const reading = c[key] as (Record<string, unknown> & { model: string; as_of: string | null }) | null;
    if (reading !== null && typeof reading !== 'object') throw new TypeError(`market_context.${key} is not a reading`);
    tracked[field] = reading ? { value: (reading[f] as Value) ?? null, model: reading.model, as_of: reading.as_of } : null;
  }
  return tracked;
}

/**
 * An event as assembled here, checked into its kind (decision 34: the shape its field gives its from and to): a
 * value of another type than its field takes is a mistake here, stopped before it reaches a ledger no build rewrites.
 */
const checked = (event: Record<keyof ChangeEvent, unknown>): ChangeEvent => ChangeEvent.parse(event);

/** A refresh's events, in a fixed order (assets by symbol, then universes), each with whether a basic plan sees it. */
export function changeEvents(before: TreeState, after: TreeState, publishedAt: string): { event: ChangeEvent; basic: boolean }[] {
  const out: { event: ChangeEvent; basic: boolean }[] = [];
  const symbols = [...new Set([...before.assets.keys(), ...after.assets.keys()])].sort();
  for (const symbol of symbols) {
    const [a, b] = [before.assets.get(symbol), after.assets.get(symbol)];
    // A basic plan reads the free tier at the time of the event; a change of membership concerns it either way.
    const membership = !!(a?.free_tier || b?.free_tier);
    const add = (field: string, from: Value, to: Value, source: Source, basic = !!b?.free_tier) =>
      out.push({
        event: checked({ published_at: publishedAt, symbol, universe: null, field, from, to, ...source }),
        basic,
      });
    const stamp = (s: AssetState): Source => ({ model: null, as_of: s.as_of });
    if (!a || !b) {
      const present = (a ?? b)!;
      add('catalogue', !!a, !!b, stamp(present), membership);
      if (present.free_tier) add('free_tier', !!a, !!b, stamp(present), membership);
      continue;
    }
    if (a.free_tier !== b.free_tier) add('free_tier', a.free_tier, b.free_tier, stamp(b), membership);
    for (const [, , field] of ASSET_FIELDS) {
      const [x, y] = [a.tracked[field] ?? null, b.tracked[field] ?? null];
      if ((x?.value ?? null) !== (y?.value ?? null)) add(field, x?.value ?? null, y?.value ?? null, reading(x, y));
    }
    for (const key of MODEL_KEYS) {
      const [was, is] = [a.stale.includes(key), b.stale.includes(key)];
      if (was !== is) add(`stale_models.${key}`, was, is, b.readings[key] ?? { model: a.readings[key]?.model ?? null, as_of: null });
    }
  }
  for (const universe of UNIVERSES) {
    const [a, b] = [before.universes.get(universe), after.universes.get(universe)];
    for (const [, , field] of UNIVERSE_FIELDS) {
      const [x, y] = [a?.[field] ?? null, b?.[field] ?? null];
      if ((x?.value ?? null) === (y?.value ?? null)) continue;
      const source = reading(x, y);
      out.push({
        event: checked({
          published_at: publishedAt,
          symbol: null,
          universe,
          field,
          from: x?.value ?? null,
          to: y?.value ?? null,
          ...source,
        }),
        basic: universe === 'crypto',
      });
    }
  }
  return out;
}

/** The reading an event names: the new one, or the model of the one that is gone (its as_of then null). */
const reading = (before: Tracked, after: Tracked): Source =>
  after ? { model: after.model, as_of: after.as_of } : { model: before?.model ?? null, as_of: null };

/**
 * The new ledger: the previous one with this refresh's events appended. Without a previous tree the feed starts
 * empty with this build; over a previous tree that has none yet, it starts with this refresh's events.
 */
export function nextLedger(previous: PreviousFeed | undefined, risks: AssetRisk[], publishedAt: string): ChangeLedger {
  const base = previous?.ledger ?? { started_at: publishedAt, events: [], basic: [] };
  if (!previous) return base;
  const unread = new Set(previous.unread);
  const raised = changeEvents(previous.state, treeState(risks.filter((r) => !unread.has(r.symbol))), publishedAt);
  const events = [...base.events];
  const basic = [...base.basic];
  for (const { event, basic: seen } of raised) {
    if (seen) basic.push(events.length);
    events.push(event);
  }
  return { started_at: base.started_at, events, basic };
}

/**
 * The feed's invariant, as the history's: every event of the previous ledger is in the new one, unchanged and in
 * its place, and the new ones come after it in time. Throws FeedLossError naming the event.
 */
export function checkFeedKept(previous: ChangeLedger | undefined, next: ChangeLedger): void {
  if (!previous) return;
  if (next.started_at !== previous.started_at) throw new FeedLossError(`started_at ${previous.started_at} would become ${next.started_at}`);
  previous.events.forEach((e, i) => {
    const now = next.events[i];
    if (!isDeepStrictEqual(now, e))
      throw new FeedLossError(
        `event ${i + 1} (${e.published_at} ${e.symbol ?? e.universe} ${e.field}) ${now ? 'would be rewritten' : 'would be dropped'}`,
      );
  });
  if (!isDeepStrictEqual(next.basic.slice(0, previous.basic.length), previous.basic))
    throw new FeedLossError("the basic plan's view of the published events would change");
  const last = previous.events.at(-1)?.published_at;
  const first = next.events[previous.events.length]?.published_at;
  if (last && first && first < last)
    throw new FeedLossError(`new events are published at ${first}, before the feed's last event (${last}); is --now or the clock behind?`);
}
