/** The key store format (decisions 12, 22), one shape for the `keys` commands and the shim. */
import { describe, expect, it } from 'vitest';
import { keyStoreFromJson } from '../../../generator/contract/keys.js';

const HASH = 'a'.repeat(64);

describe('keyStoreFromJson', () => {
  it('loads records by hash; a missing label reads empty, unknown fields are dropped', () => {
    const store = keyStoreFromJson({
      keys: [
        { sha256: HASH, plan: 'pro', extra: 1 },
        { sha256: 'b'.repeat(64), plan: 'basic', label: 'x', created: '2026-10-01T00:00:00Z' },
      ],
    });
    expect(store.get(HASH)).toEqual({ sha256: HASH, plan: 'pro', label: '' });
    expect(store.get('b'.repeat(64))).toEqual({ sha256: 'b'.repeat(64), plan: 'basic', label: 'x', created: '2026-10-01T00:00:00Z' });
  });

  it.each([
    [{ nokeys: [] }, 'f: expected {"keys": [...]}'],
    [[], 'f: expected {"keys": [...]}'],
    [{ keys: [1] }, 'f: keys[0]: expected an object {sha256, plan, label}'],
    [{ keys: [{ sha256: 'ABC', plan: 'pro' }] }, 'f: keys[0].sha256: expected 64 lower-case hex digits'],
    [{ keys: [{ plan: 'pro' }] }, 'f: keys[0].sha256: expected 64 lower-case hex digits'],
    [
      {
        keys: [
          { sha256: HASH, plan: 'pro' },
          { sha256: HASH, plan: 'gold' },
        ],
      },
      'f: keys[1].plan: expected basic, pro or ultra, found "gold"',
    ],
    [{ keys: [{ sha256: HASH, plan: 'pro', created: 'yesterday' }] }, 'f: keys[0].created: expected an ISO 8601 time, found "yesterday"'],
    [{ keys: [{ sha256: HASH, plan: 'pro', created: 5 }] }, 'f: keys[0].created: expected an ISO 8601 time, found 5'],
  ])('%j is refused: %s', (json, message) => {
    expect(() => keyStoreFromJson(json, 'f')).toThrow(message);
  });
});
