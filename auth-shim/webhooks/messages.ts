/**
 * What an endpoint is sent (decision 108), cut from the change feed's ledger: the events of one refresh after the
 * position the endpoint has received up to, those its filters pass and its owner's plan sees (decision 34), at most
 * WEBHOOK_MESSAGE_EVENTS a message. A message is named by its endpoint and the last position it covers, so the
 * same message has the same id on every retry and after any restart. Runtime-neutral and pure.
 */
import type { ChangeEvent } from '../../generator/contract/shapes.js';
import type { Plan } from '../../generator/contract/plans.js';
import { filterField, WEBHOOK_MESSAGE_EVENTS } from '../../generator/contract/webhooks.js';
import type { Feed } from './feed.js';
import type { EndpointRecord } from './store.js';

/** A message's body: what a receiver parses. */
export interface ChangesMessage {
  type: 'changes.published';
  published_at: string;
  /** The first feed position the message covers: its refresh's first, or the one after the message before it. */
  from_position: number;
  /** The last: the endpoint has received everything up to it once this is delivered. */
  to_position: number;
  events: ChangeEvent[];
}

export interface Message {
  id: string;
  body: string;
  to: number;
}

type Filters = Pick<EndpointRecord, 'fields' | 'symbols' | 'universes'>;

/** Whether an event passes an endpoint's filters: its field, and its asset or universe (an asset by its universes too). */
function passes(f: Filters, e: ChangeEvent, feed: Feed): boolean {
  if (f.fields.length && !f.fields.includes(filterField(e.field))) return false;
  if (!f.symbols.length && !f.universes.length) return true;
  if (e.symbol !== null && f.symbols.includes(e.symbol)) return true;
  if (e.universe !== null) return f.universes.includes(e.universe);
  return e.symbol !== null && feed.universesOf(e.symbol).some((u) => f.universes.includes(u));
}

/** Whether the plan sees the event at index `i` (decision 34). */
const visible = (feed: Feed, plan: Plan, i: number) => plan !== 'basic' || feed.basic.has(i);

/**
 * The next message after position `after` for an endpoint, or null when no event after it is for the endpoint;
 * `through` is then the end of the feed, which the endpoint may take as received.
 */
export function nextMessage(
  feed: Feed,
  e: Filters & { id: string },
  plan: Plan,
  after: number,
): { message: Message | null; through: number } {
  const events = feed.ledger.events;
  let i = Math.max(0, after);
  while (i < events.length && !(visible(feed, plan, i) && passes(e, events[i]!, feed))) i++;
  if (i >= events.length) return { message: null, through: Math.max(after, events.length) };
  const refresh = events[i]!.published_at;
  // The message covers its refresh from its first position (or from where the one before it stopped): the same bytes
  // however far the endpoint had moved past refreshes that held nothing for it.
  let from = i;
  while (from > after && events[from - 1]!.published_at === refresh) from--;
  const picked: ChangeEvent[] = [];
  let last = i;
  for (; i < events.length && events[i]!.published_at === refresh; i++) {
    if (!visible(feed, plan, i) || !passes(e, events[i]!, feed)) continue;
    if (picked.length === WEBHOOK_MESSAGE_EVENTS) break;
    picked.push(events[i]!);
    last = i;
  }
  // The refresh's last message covers its whole tail, so the next starts at the next refresh.
  const to = picked.length < WEBHOOK_MESSAGE_EVENTS || i === events.length || events[i]!.published_at !== refresh ? i : last + 1;
  const body: ChangesMessage = {
    type: 'changes.published',
    published_at: refresh,
    from_position: from + 1,
    to_position: to,
    events: picked,
  };
  return { message: { id: messageId(e.id, to), body: JSON.stringify(body), to }, through: to };
}

/** A message's id: the same for the same endpoint and position on every retry (decision 108). */
const messageId = (endpoint: string, to: number): string => `msg_${endpoint}_${to}`;

/** How many messages an endpoint has still to receive from `after` on. */
export function pendingMessages(feed: Feed, e: Filters & { id: string }, plan: Plan, after: number): number {
  let n = 0;
  for (let at = after; ;) {
    const { message, through } = nextMessage(feed, e, plan, at);
    if (!message) return n;
    n++;
    at = through;
  }
}

/** The body of a test message (`POST /v1/webhooks/{id}/test`). */
export const testMessage = (endpoint: string, now: number): string =>
  JSON.stringify({ type: 'webhook.test', endpoint_id: endpoint, sent_at: new Date(now).toISOString() });
