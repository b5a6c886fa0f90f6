import { afterEach, describe, expect, it, vi } from 'vitest';
import { TroubleLog } from '../../auth-shim/trouble-log.js';

describe('TroubleLog', () => {
  afterEach(() => vi.useRealTimers());

  it('says each kind of trouble at most once a minute, and at once again after it is over', () => {
    vi.useFakeTimers({ now: Date.UTC(2026, 11, 4) });
    const said: string[] = [];
    const troubles = new TroubleLog<'a' | 'b'>((m) => said.push(m));
    troubles.say('a', 'a1');
    troubles.say('a', 'a2'); // the same minute: not said
    troubles.say('b', 'b1'); // another kind: said
    vi.advanceTimersByTime(59_999);
    troubles.say('a', 'a3');
    vi.advanceTimersByTime(1);
    troubles.say('a', 'a4'); // a minute on: said
    expect(troubles.over('a')).toBe(true);
    expect(troubles.over('a')).toBe(false);
    troubles.say('a', 'a5'); // over, so the next is said at once
    expect(said).toEqual(['a1', 'b1', 'a4', 'a5']);
  });
});
