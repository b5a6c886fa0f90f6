/** The key store format (decisions 12, 22, 37), one shape for the `keys` commands and the shim. */
import { describe, expect, it } from 'vitest';
import { hasExpired, keyExpiry, keyFileFromJson, keyStoreFromJson } from '../../../generator/contract/keys.js';

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
    // A time without its zone is another instant on each machine: the Node server and the edge must agree.
    [
      { keys: [{ sha256: HASH, plan: 'pro', expires: '2026-12-31T00:00:00' }] },
      'f: keys[0].expires: expected an ISO 8601 instant with its zone, such as 2026-12-31T00:00:00Z, found "2026-12-31T00:00:00"',
    ],
    [{ keys: [{ sha256: HASH, plan: 'pro', expires: 'December 31, 2026' }] }, 'f: keys[0].expires: expected an ISO 8601 instant'],
    [{ keys: [{ sha256: HASH, plan: 'pro', expires: '2026-02-30' }] }, 'f: keys[0].expires: expected an ISO 8601 instant'],
  ])('%j is refused: %s', (json, message) => {
    expect(() => keyStoreFromJson(json, 'f')).toThrow(message);
  });
});

describe('revoked keys (decision 87)', () => {
  const revoked = {
    sha256: 'c'.repeat(64),
    plan: 'ultra',
    label: 'Acme',
    created: '2026-10-01T00:00:00Z',
    revoked: '2026-11-20T09:00:00Z',
  };

  it('the credential parser never reads them: a revoked hash is no key, and a mistake among them stops no server', () => {
    const store = keyStoreFromJson({ keys: [{ sha256: HASH, plan: 'pro' }], revoked: [revoked] });
    expect([...store.keys()]).toEqual([HASH]);
    expect(store.has('c'.repeat(64))).toBe(false);
    for (const broken of ['not a list', [1], [{ ...revoked, plan: 'gold' }]])
      expect([...keyStoreFromJson({ keys: [{ sha256: HASH, plan: 'pro' }], revoked: broken }).keys()]).toEqual([HASH]);
  });

  it("the commands' read keeps them, each checked and named like a key", () => {
    expect(keyFileFromJson({ keys: [], revoked: [revoked] }).revoked).toEqual([revoked]);
    expect(keyFileFromJson({ keys: [] }).revoked).toBeUndefined();
    expect(() => keyFileFromJson({ keys: [], revoked: 'x' }, 'f')).toThrow('f: revoked: expected an array');
    expect(() => keyFileFromJson({ keys: [], revoked: [{ ...revoked, revoked: 'yesterday' }] }, 'f')).toThrow(
      'f: revoked[0].revoked: expected an ISO 8601 instant with its zone',
    );
    expect(() => keyFileFromJson({ keys: [], revoked: [{ ...revoked, plan: 'gold' }] }, 'f')).toThrow(
      'f: revoked[0].plan: expected basic, pro or ultra, found "gold"',
    );
  });
});

describe("a key's expiry (decision 37)", () => {
  it('is the instant its expires names, whatever the zone it is written in; none is never', () => {
    expect(keyExpiry({ expires: '2026-12-31T01:00:00+01:00' })).toBe(Date.UTC(2026, 11, 31));
    expect(keyExpiry({ expires: '2026-12-31' })).toBe(Date.UTC(2026, 11, 31));
    expect(keyExpiry({})).toBe(Infinity);
  });

  it('the key is refused from that instant on, not a millisecond before', () => {
    const at = Date.UTC(2026, 11, 31);
    expect([hasExpired(at, at - 1), hasExpired(at, at), hasExpired(at, at + 1), hasExpired(Infinity, Date.UTC(2999, 0))]).toEqual([
      false,
      true,
      true,
      false,
    ]);
  });
});
