/** The change feed's rules (decision 34): which moves are events, who sees them, and the ledger no build rewrites. */
import { describe, expect, it } from 'vitest';
import { changeEvents, checkFeedKept, FeedLossError, nextLedger, treeState, type ChangeLedger } from '../../../generator/api/changes.js';
import { changesPage } from '../../../generator/contract/changes-page.js';
import type { AssetRisk } from '../../../generator/contract/shapes.js';

const AT = '2026-10-15T00:30:00Z';
const stamp = (model: string) => ({ model, as_of: '2026-10-14T23:58:00Z' });
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Draft = Record<string, any>;

/** An AssetRisk with the fields the feed reads; `edit` changes it. */
function risk(symbol: string, edit: (r: Draft) => void = () => {}): AssetRisk {
  const r: Draft = {
    symbol,
    as_of: '2026-10-14T23:58:00Z',
    free_tier: false,
    stale_models: [],
    gravity: { score: 55.5, risk_level: 6, ...stamp('twap_gravity_crypto@1') },
    twap: { premium_pct: 3, risk_level: 5, risk_level_model: 'twap_risk_level_crypto@1', ...stamp('twap_gravity_crypto@1') },
    sma_composite: { score: 41, band: '0.4-0.5', ...stamp('sma_composite_crypto@1') },
    phase: { label: 'Bull Phase Expansion', ...stamp('polynomial_phase_crypto@1') },
    dca: null,
    market_context: {
      universe: 'crypto',
      fear_greed: { value: 61, label: 'greed', model: 'fear_greed_crypto@1', as_of: '2026-10-14' },
      peak_valley: { score: 40, zone: 'Neutral', model: 'peak_valley_crypto@1', as_of: '2026-10-14' },
      macro_risk: null,
    },
  };
  edit(r);
  return r as AssetRisk;
}

const events = (before: AssetRisk[], after: AssetRisk[]) => changeEvents(treeState(before), treeState(after), AT);

describe('which moves are events', () => {
  it('a level, band or label that moves is one event, from and to, with the reading it came from', () => {
    const got = events(
      [risk('BTC')],
      [
        risk('BTC', (r) => {
          r.gravity.risk_level = 7;
          r.twap.risk_level = 6;
          r.phase.label = 'Euphoria';
        }),
      ],
    );
    expect(got.map((e) => e.event)).toEqual([
      { published_at: AT, symbol: 'BTC', universe: null, field: 'gravity.risk_level', from: 6, to: 7, ...stamp('twap_gravity_crypto@1') },
      // The TWAP risk level is its own model beside the TWAP reading.
      { published_at: AT, symbol: 'BTC', universe: null, field: 'twap.risk_level', from: 5, to: 6, ...stamp('twap_risk_level_crypto@1') },
      {
        published_at: AT,
        symbol: 'BTC',
        universe: null,
        field: 'phase.label',
        from: 'Bull Phase Expansion',
        to: 'Euphoria',
        ...stamp('polynomial_phase_crypto@1'),
      },
    ]);
  });

  it('a score that moves within its band or level is no event', () => {
    const moved = risk('BTC', (r) => {
      r.gravity.score = 58.9;
      r.sma_composite.score = 48;
      r.twap.premium_pct = 9;
      r.market_context.fear_greed.value = 70;
    });
    expect(events([risk('BTC')], [moved])).toEqual([]);
  });

  it('a reading that appears or goes: from or to null; a model gone keeps its name and loses its as_of', () => {
    const got = events(
      [risk('ETH')],
      [
        risk('ETH', (r) => {
          r.sma_composite = null;
          r.dca = { band: '0.2-0.3', ...stamp('dca_regression@1') };
        }),
      ],
    ).map((e) => e.event);
    expect(got).toContainEqual(
      expect.objectContaining({ field: 'sma_composite.band', from: '0.4-0.5', to: null, model: 'sma_composite_crypto@1', as_of: null }),
    );
    expect(got).toContainEqual(expect.objectContaining({ field: 'dca.band', from: null, to: '0.2-0.3', model: 'dca_regression@1' }));
  });

  it("a universe's label, zone or status: one event for the universe, not one per member", () => {
    const moved = (s: string) => risk(s, (r) => (r.market_context.peak_valley.zone = 'Euphoria Risk'));
    const got = events([risk('BTC'), risk('ETH')], [moved('BTC'), moved('ETH')]);
    expect(got).toEqual([
      {
        event: {
          published_at: AT,
          symbol: null,
          universe: 'crypto',
          field: 'peak_valley.zone',
          from: 'Neutral',
          to: 'Euphoria Risk',
          model: 'peak_valley_crypto@1',
          as_of: '2026-10-14',
        },
        basic: true,
      },
    ]);
  });

  it('free tier, stale models and the catalogue are memberships: true or false', () => {
    const got = events(
      [risk('BTC'), risk('OLD', (r) => (r.free_tier = true))],
      [
        risk('BTC', (r) => {
          r.free_tier = true;
          r.stale_models = ['gravity', 'twap'];
        }),
        risk('NEW'),
      ],
    ).map(({ event: e }) => [e.symbol, e.field, e.from, e.to, e.model]);
    expect(got).toEqual([
      ['BTC', 'free_tier', false, true, null],
      ['BTC', 'stale_models.gravity', false, true, 'twap_gravity_crypto@1'],
      // Staleness is the reading's own: the TWAP reading's model, not its risk level's.
      ['BTC', 'stale_models.twap', false, true, 'twap_gravity_crypto@1'],
      ['NEW', 'catalogue', false, true, null],
      ['OLD', 'catalogue', true, false, null],
      ['OLD', 'free_tier', true, false, null],
    ]);
  });
});

describe('who sees an event', () => {
  it("basic: its free-tier assets at the time, either side of a membership change, and the crypto universe's", () => {
    const seen = (before: AssetRisk[], after: AssetRisk[]) =>
      events(before, after).map((e) => [e.event.symbol ?? e.event.universe, e.event.field, e.basic]);
    const free = (s: string, edit: (r: Draft) => void = () => {}) =>
      risk(s, (r) => {
        r.free_tier = true;
        edit(r);
      });
    expect(seen([free('BTC')], [free('BTC', (r) => (r.gravity.risk_level = 7))])).toEqual([['BTC', 'gravity.risk_level', true]]);
    expect(seen([risk('NVDA')], [risk('NVDA', (r) => (r.gravity.risk_level = 7))])).toEqual([['NVDA', 'gravity.risk_level', false]]);
    // Leaving the free tier concerns a basic caller; the reading moved as it left is no longer its to read.
    expect(seen([free('SOL')], [risk('SOL', (r) => (r.gravity.risk_level = 7))])).toEqual([
      ['SOL', 'free_tier', true],
      ['SOL', 'gravity.risk_level', false],
    ]);
    const equity = (s: string, status: string) =>
      risk(
        s,
        (r) =>
          (r.market_context = {
            universe: 'quantum',
            fear_greed: null,
            peak_valley: null,
            macro_risk: { status, ...stamp('sector_indicators_equity@1') },
          }),
      );
    expect(seen([equity('IONQ', 'Deep Value')], [equity('IONQ', 'Guarded')])).toEqual([['quantum', 'macro_risk.status', false]]);
  });
});

describe('the ledger', () => {
  const day = (n: number) => `2026-10-${14 + n}T00:30:00Z`;
  const grown = (before: AssetRisk[], after: AssetRisk[], ledger: ChangeLedger | undefined, at: string) =>
    nextLedger({ ledger, state: treeState(before), unread: [] }, after, at);

  it('starts empty with no previous tree, then appends each refresh, keeping what was published', () => {
    const first = nextLedger(undefined, [risk('BTC')], day(0));
    expect(first).toEqual({ started_at: day(0), events: [], basic: [] });
    const second = grown([risk('BTC')], [risk('BTC', (r) => (r.gravity.risk_level = 7))], first, day(1));
    const third = grown([risk('BTC', (r) => (r.gravity.risk_level = 7))], [risk('BTC', (r) => (r.free_tier = true))], second, day(2));
    expect(third.events.map((e) => [e.published_at, e.field, e.to])).toEqual([
      [day(1), 'gravity.risk_level', 7],
      [day(2), 'free_tier', true],
      [day(2), 'gravity.risk_level', 6],
    ]);
    expect(third.basic).toEqual([1, 2]);
    expect(() => checkFeedKept(second, third)).not.toThrow();
  });

  it('an asset whose previous readings could not be read raises nothing this refresh', () => {
    const l = nextLedger({ ledger: undefined, state: treeState([risk('BTC')]), unread: ['ETH'] }, [risk('BTC'), risk('ETH')], day(1));
    expect(l.events).toEqual([]);
  });

  it('refuses a build that would drop, rewrite or reorder a published event', () => {
    const free = (edit: (r: Draft) => void = () => {}) =>
      risk('BTC', (r) => {
        r.free_tier = true;
        edit(r);
      });
    const kept = grown([free()], [free((r) => (r.gravity.risk_level = 7))], nextLedger(undefined, [], day(0)), day(1));
    const loss = (next: ChangeLedger) => () => checkFeedKept(kept, next);
    expect(loss({ ...kept, events: [] })).toThrow(FeedLossError);
    const rewritten = { ...kept.events[0]!, to: 8 } as ChangeLedger['events'][number];
    expect(loss({ ...kept, events: [rewritten] })).toThrow(/event 1 \(.* BTC gravity.risk_level\) would be rewritten/);
    expect(loss({ ...kept, started_at: day(1) })).toThrow(/started_at/);
    expect(kept.basic).toEqual([0]);
    expect(loss({ ...kept, basic: [] })).toThrow(/basic plan/);
    const late = grown([risk('BTC')], [risk('BTC', (r) => (r.phase.label = 'X'))], kept, day(0));
    expect(() => checkFeedKept(kept, late)).toThrow(/before the feed's last event/);
  });
});

describe('a page of the feed', () => {
  // Ten refreshes a day apart, each raising one event on an asset; the even ones on a free-tier asset.
  const ledger: ChangeLedger = {
    started_at: '2026-10-01T00:30:00Z',
    events: Array.from({ length: 10 }, (_, i) => ({
      published_at: `2026-10-${String(i + 2).padStart(2, '0')}T00:30:00Z`,
      symbol: i % 2 ? 'NVDA' : 'BTC',
      universe: null,
      field: 'gravity.risk_level',
      from: i,
      to: i + 1,
      model: 'twap_gravity_crypto@1',
      as_of: `2026-10-${String(i + 1).padStart(2, '0')}T23:58:00Z`,
    })),
    basic: [0, 2, 4, 6, 8],
  };
  const page = (q: Partial<Parameters<typeof changesPage>[1]>, audience: 'basic' | 'all' = 'all') =>
    changesPage(ledger, { limit: 3, maxLimit: 1000, ...q }, audience);

  it('is oldest first, with a cursor that walks to the end and counts in the window', () => {
    const walked: unknown[] = [];
    let cursor: string | undefined;
    do {
      const p = page({ cursor });
      walked.push(...p.data.events.map((e) => e.to));
      expect(p.data.total_event_count).toBe(10);
      cursor = p.data.next_cursor ?? undefined;
    } while (cursor);
    expect(walked).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(page({}).data).toMatchObject({
      from: '2026-10-02T00:30:00Z',
      through: '2026-10-04T00:30:00Z',
      event_count: 3,
      next_cursor: '3',
    });
  });

  it('from and to are inclusive dates of published_at; the cursor is exclusive', () => {
    const p = page({ from: '2026-10-04', to: '2026-10-06', limit: 10 });
    expect(p.data.events.map((e) => e.to)).toEqual([3, 4, 5]);
    expect([p.data.total_event_count, p.data.next_cursor]).toEqual([3, null]);
    expect(page({ from: '2026-10-04', cursor: '4', limit: 10 }).data.events.map((e) => e.to)).toEqual([5, 6, 7, 8, 9, 10]);
    expect(page({ from: '2026-11-01' }).data).toMatchObject({
      events: [],
      from: null,
      through: null,
      total_event_count: 0,
      next_cursor: null,
    });
  });

  it("a basic caller's page holds only its events; its cursor is the event's place in the whole feed", () => {
    const p = page({ limit: 2 }, 'basic');
    expect(p.data.events.map((e) => e.symbol)).toEqual(['BTC', 'BTC']);
    expect([p.data.total_event_count, p.data.next_cursor]).toEqual([5, '3']);
    expect(page({ limit: 10, cursor: '3' }, 'basic').data.events.map((e) => e.to)).toEqual([5, 7, 9]);
  });

  it('envelope: as_of the newest reading on the page, model_version its models; null for an empty page', () => {
    const p = page({ limit: 2 });
    expect([p.as_of, p.model_version]).toEqual(['2026-10-02T23:58:00Z', { twap_gravity_crypto: '1' }]);
    expect([page({ from: '2027-01-01' }).as_of, page({ from: '2027-01-01' }).model_version]).toEqual([null, null]);
  });
});
