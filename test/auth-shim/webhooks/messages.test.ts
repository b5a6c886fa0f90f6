/** What an endpoint is sent: the events of one refresh after its position, filtered, seen by its plan, 100 at most. */
import { describe, expect, it } from 'vitest';
import type { Catalog, ChangeEvent, ChangeLedger } from '../../../generator/contract/shapes.js';
import { feedOf } from '../../../auth-shim/webhooks/feed.js';
import { nextMessage, pendingMessages, type ChangesMessage } from '../../../auth-shim/webhooks/messages.js';

const event = (published_at: string, symbol: string | null, field: string, universe: string | null = null): ChangeEvent =>
  ({ published_at, symbol, universe, field, from: 1, to: 2, model: null, as_of: null }) as unknown as ChangeEvent;
const catalog = {
  assets: {
    BTC: { universes: ['crypto'] },
    NVDA: { universes: ['ai_infrastructure', 'us_stock_market'] },
    MSTR: { universes: ['bitcoin_equities'] },
  },
} as unknown as Catalog;
const D1 = '2026-10-14T00:30:00Z';
const D2 = '2026-10-15T00:30:00Z';
const D3 = '2026-10-16T00:30:00Z';
const ledger = (events: ChangeEvent[], basic: number[] = []): ChangeLedger => ({ started_at: D1, events, basic }) as ChangeLedger;
const all = { id: 'ep_x', fields: [], symbols: [], universes: [] };
const body = (m: { body: string } | null) => JSON.parse(m!.body) as ChangesMessage;

describe('nextMessage', () => {
  const feed = feedOf(
    ledger([
      event(D1, 'BTC', 'gravity.risk_level'),
      event(D1, 'NVDA', 'dca.band'),
      event(D2, 'MSTR', 'stale_models.twap'),
      event(D2, null, 'fear_greed.label', 'crypto'),
      event(D3, 'NVDA', 'phase.label'),
    ]),
    catalog,
  );

  it('sends one refresh a message, naming the positions it covers, with an id fixed by endpoint and position', () => {
    const first = nextMessage(feed, all, 'pro', 0);
    expect(body(first.message)).toMatchObject({ type: 'changes.published', published_at: D1, from_position: 1, to_position: 2 });
    expect(first.message!.id).toBe('msg_ep_x_2');
    const second = nextMessage(feed, all, 'pro', first.through);
    expect(body(second.message)).toMatchObject({ published_at: D2, from_position: 3, to_position: 4 });
    expect(body(second.message).events.map((e) => e.field)).toEqual(['stale_models.twap', 'fear_greed.label']);
    expect(nextMessage(feed, all, 'pro', 5)).toEqual({ message: null, through: 5 });
    expect(pendingMessages(feed, all, 'pro', 0)).toBe(3);
  });

  it('filters by field (stale_models stands for each of its keys), by symbol, and by universe (an asset by its own)', () => {
    const stale = nextMessage(feed, { ...all, fields: ['stale_models'] }, 'pro', 0);
    expect(body(stale.message)).toMatchObject({ published_at: D2, from_position: 3, to_position: 4 });
    expect(body(stale.message).events.map((e) => e.symbol)).toEqual(['MSTR']);
    const ai = { ...all, universes: ['ai_infrastructure'] };
    expect(body(nextMessage(feed, ai, 'pro', 0).message).events.map((e) => e.symbol)).toEqual(['NVDA']);
    expect(pendingMessages(feed, ai, 'pro', 0)).toBe(2); // D1's NVDA and D3's
    const crypto = { ...all, universes: ['crypto'] };
    expect(pendingMessages(feed, crypto, 'pro', 0)).toBe(2); // BTC on D1, the crypto universe's label on D2
    expect(pendingMessages(feed, { ...all, symbols: ['MSTR'] }, 'pro', 0)).toBe(1);
    expect(pendingMessages(feed, { ...all, symbols: ['MSTR'], fields: ['dca.band'] }, 'pro', 0)).toBe(0);
  });

  it('a refresh with nothing for the endpoint sends nothing, and the position moves past it', () => {
    // The message covers its own refresh, however far the endpoint had got: the same bytes from any starting point.
    const r = nextMessage(feed, { ...all, symbols: ['NVDA'] }, 'pro', 2);
    expect(body(r.message)).toMatchObject({ published_at: D3, from_position: 5, to_position: 5 });
    expect(nextMessage(feed, { ...all, symbols: ['NVDA'] }, 'pro', 4).message).toEqual(r.message);
    expect(nextMessage(feed, { ...all, symbols: ['BTC'] }, 'pro', 1)).toEqual({ message: null, through: 5 });
  });

  it("sends a basic owner only the events basic's view of the feed holds", () => {
    const f = feedOf(ledger(feed.ledger.events, [0, 3]), catalog);
    expect(body(nextMessage(f, all, 'basic', 0).message).events.map((e) => e.symbol)).toEqual(['BTC']);
    expect(body(nextMessage(f, all, 'basic', 1).message).events.map((e) => e.field)).toEqual(['fear_greed.label']);
    expect(pendingMessages(f, all, 'basic', 0)).toBe(2);
    expect(pendingMessages(f, all, 'ultra', 0)).toBe(3);
  });

  it('cuts a refresh of more than 100 events into messages of 100, in feed order, the last covering its tail', () => {
    const many = [...Array.from({ length: 250 }, (_, i) => event(D1, `S${i}`, 'gravity.risk_level')), event(D1, 'X', 'dca.band')];
    const f = feedOf(ledger([...many, event(D2, 'BTC', 'dca.band')]), catalog);
    const only = { ...all, fields: ['gravity.risk_level'] };
    const cut: ChangesMessage[] = [];
    for (let at = 0, r = nextMessage(f, only, 'pro', at); r.message; at = r.through, r = nextMessage(f, only, 'pro', at))
      cut.push(body(r.message));
    expect(cut.map((m) => [m.from_position, m.to_position, m.events.length])).toEqual([
      [1, 100, 100],
      [101, 200, 100],
      [201, 251, 50],
    ]);
    expect(cut.flatMap((m) => m.events.map((e) => e.symbol))).toEqual(many.slice(0, 250).map((e) => e.symbol));
  });
});
