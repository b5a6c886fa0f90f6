/**
 * Step credential, alone: a known key is answered without waiting; a revoked key is refused at once; a key and a
 * marketplace pair sent together, both valid, give the higher plan (decision 28); a key is refused from its expiry
 * on, with or without a change of the key store (decision 37).
 */
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../../../auth-shim/sha256.js';
import { CredentialCheck } from '../../../auth-shim/steps/credential.js';
import type { KeyStore } from '../../../generator/contract/keys.js';
import { refusalOf } from './refusals.js';

const headers = (h: Record<string, string>) => new Headers(h);
const NOW = Date.UTC(2026, 9, 14, 12, 0, 0);

describe('step: credential', () => {
  it('503 with no credential source, 401 for an unknown key', async () => {
    expect((await refusalOf(() => new CredentialCheck(null, {}).caller(headers({ 'x-api-key': 'k' }), NOW)))?.code).toBe(
      'gateway_not_configured',
    );
    const empty: KeyStore = new Map();
    expect((await refusalOf(() => new CredentialCheck(empty, {}).caller(headers({ 'x-api-key': 'k' }), NOW)))?.code).toBe('unauthorized');
  });

  it('a key is hashed once: its second request is answered synchronously; a reloaded store forgets it', async () => {
    const hash = await sha256Hex('secret-key');
    let store: KeyStore = new Map([[hash, { sha256: hash, plan: 'pro', label: 'a' }]]);
    const check = new CredentialCheck({ current: () => store }, {});
    const first = check.caller(headers({ 'x-api-key': 'secret-key' }), NOW);
    expect(first).toBeInstanceOf(Promise);
    expect(await first).toMatchObject({ plan: 'pro', id: `key:${hash.slice(0, 8)}` });
    expect(check.caller(headers({ 'x-api-key': 'secret-key' }), NOW)).toMatchObject({ plan: 'pro' });
    store = new Map();
    expect((await refusalOf(() => check.caller(headers({ 'x-api-key': 'secret-key' }), NOW)))?.code).toBe('unauthorized');
  });

  it('a valid key and a valid marketplace pair together: the higher plan applies, and is the one counted (decision 28)', async () => {
    const basic = await sha256Hex('basic-key');
    const pro = await sha256Hex('pro-key');
    const store: KeyStore = new Map([
      [basic, { sha256: basic, plan: 'basic', label: 'b' }],
      [pro, { sha256: pro, plan: 'pro', label: 'p' }],
    ]);
    const check = new CredentialCheck(store, { host: 'api.example', secret: 'proxy-secret' });
    const pair = (plan: string) => ({
      'x-rapidapi-key': 'subscriber',
      'x-rapidapi-host': 'api.example',
      'x-rapidapi-proxy-secret': 'proxy-secret',
      'x-rapidapi-subscription': plan,
    });
    for (let round = 0; round < 2; round++) {
      // The second round meets keys already known: the pair beside them is still weighed.
      expect(await check.caller(headers({ 'x-api-key': 'basic-key', ...pair('PRO') }), NOW)).toMatchObject({ plan: 'pro', quotaKey: null });
      expect(await check.caller(headers({ 'x-api-key': 'pro-key', ...pair('BASIC') }), NOW)).toMatchObject({
        plan: 'pro',
        quotaKey: `key:${pro}`,
      });
      expect(await check.caller(headers({ 'x-api-key': 'basic-key', ...pair('GOLD') }), NOW)).toMatchObject({
        plan: 'basic',
        quotaKey: `key:${basic}`,
      });
      expect(await check.caller(headers({ 'x-api-key': 'nobody', ...pair('ULTRA') }), NOW)).toMatchObject({ plan: 'ultra' });
    }
  });

  it('a marketplace pair judged before is answered synchronously; a wrong secret stays refused', async () => {
    const check = new CredentialCheck(new Map(), { host: 'api.example', secret: 'proxy-secret' });
    const pair = (secret: string) =>
      headers({
        'x-rapidapi-key': 'subscriber',
        'x-rapidapi-host': 'api.example',
        'x-rapidapi-proxy-secret': secret,
        'x-rapidapi-subscription': 'PRO',
      });
    expect(await check.caller(pair('proxy-secret'), NOW)).toMatchObject({ plan: 'pro', quotaKey: null, id: 'marketplace:pro' });
    const again = check.caller(pair('proxy-secret'), NOW);
    expect(again).not.toBeInstanceOf(Promise);
    expect(again).toMatchObject({ plan: 'pro', quotaKey: null });
    for (let round = 0; round < 2; round++) expect((await refusalOf(() => check.caller(pair('guess'), NOW)))?.code).toBe('unauthorized');
  });

  it('a stored key sent in the pair is that key, its plan counted, whichever form judged it first; a reload forgets both (decision 13)', async () => {
    const hash = await sha256Hex('our-key');
    let store: KeyStore = new Map([[hash, { sha256: hash, plan: 'basic', label: 'o' }]]);
    const check = new CredentialCheck({ current: () => store }, { host: 'api.example', secret: 'proxy-secret' });
    const pair = (key: string) =>
      headers({
        'x-rapidapi-key': key,
        'x-rapidapi-host': 'api.example',
        'x-rapidapi-proxy-secret': 'proxy-secret',
        'x-rapidapi-subscription': 'ULTRA',
      });
    const ours = { plan: 'basic', quotaKey: `key:${hash}` };
    // Judged by X-API-Key first, then met in the pair: the key's plan, not the subscription's, and counted by us.
    expect(await check.caller(headers({ 'x-api-key': 'our-key' }), NOW)).toMatchObject(ours);
    for (let round = 0; round < 2; round++) expect(await check.caller(pair('our-key'), NOW)).toMatchObject(ours);
    // A key of nobody's in the pair falls to the proxy secret; met later as X-API-Key, it is still nobody's.
    expect(await check.caller(pair('subscriber'), NOW)).toMatchObject({ plan: 'ultra', quotaKey: null });
    expect((await refusalOf(() => check.caller(headers({ 'x-api-key': 'subscriber' }), NOW)))?.code).toBe('unauthorized');
    // The key added to the store: neither form keeps the old verdict.
    const added = await sha256Hex('subscriber');
    store = new Map([...store, [added, { sha256: added, plan: 'pro', label: 's' }]]);
    expect(await check.caller(pair('subscriber'), NOW)).toMatchObject({ plan: 'pro', quotaKey: `key:${added}` });
    expect(await check.caller(headers({ 'x-api-key': 'subscriber' }), NOW)).toMatchObject({ plan: 'pro' });
  });

  it('a key with whitespace around it is the same key, as Node hands it over, where a Workers runtime keeps it', async () => {
    const hash = await sha256Hex('spaced-key');
    const check = new CredentialCheck(new Map([[hash, { sha256: hash, plan: 'ultra', label: 's' }]]), {});
    // Headers as a runtime that does not trim values hands them over (the Fetch spec's Headers would trim).
    const raw = (h: Record<string, string>) => ({ get: (n: string) => h[n] ?? null, has: (n: string) => n in h }) as unknown as Headers;
    expect(await check.caller(raw({ 'x-api-key': 'spaced-key ' }), NOW)).toMatchObject({ plan: 'ultra' });
    expect(await check.caller(raw({ 'x-api-key': '\tspaced-key' }), NOW)).toMatchObject({ plan: 'ultra' });
  });

  it('a key is refused from its expiry on, though its verdict is kept: the 401 says when, never which key (decision 37)', async () => {
    const hash = await sha256Hex('trial-key');
    const expires = '2026-10-14T12:00:05Z';
    const store: KeyStore = new Map([[hash, { sha256: hash, plan: 'pro', label: 'Acme trial', expires }]]);
    const check = new CredentialCheck(store, {});
    const trial = headers({ 'x-api-key': 'trial-key' });
    expect(await check.caller(trial, NOW)).toMatchObject({ plan: 'pro', expires });
    // Known now: answered at once, until the instant it expires; the store is the same object throughout.
    expect(check.caller(trial, Date.parse(expires) - 1)).toMatchObject({ plan: 'pro' });
    for (const at of [Date.parse(expires), Date.parse(expires) + 86_400_000]) {
      const refused = await refusalOf(() => check.caller(trial, at));
      expect(refused).toMatchObject({ code: 'unauthorized', headers: { 'WWW-Authenticate': 'ApiKey header="X-API-Key"' } });
      expect(refused!.message).toBe('The credential sent in X-API-Key is not valid: the key expired at 2026-10-14T12:00:05Z');
      expect(refused!.message).not.toMatch(/trial-key|Acme|[0-9a-f]{8}/);
    }
  });

  it('an expiry written with an offset is the same instant everywhere; a key without one never expires', async () => {
    const [a, b] = await Promise.all([sha256Hex('offset-key'), sha256Hex('forever-key')]);
    const store: KeyStore = new Map([
      [a, { sha256: a, plan: 'basic', label: '', expires: '2026-10-14T14:00:00+02:00' }],
      [b, { sha256: b, plan: 'basic', label: '' }],
    ]);
    const check = new CredentialCheck(store, {});
    expect(await check.caller(headers({ 'x-api-key': 'offset-key' }), NOW - 1)).toMatchObject({ plan: 'basic' });
    expect((await refusalOf(() => check.caller(headers({ 'x-api-key': 'offset-key' }), NOW)))?.message).toContain(
      'expired at 2026-10-14T12:00:00Z',
    );
    expect(await check.caller(headers({ 'x-api-key': 'forever-key' }), Date.UTC(2099, 0, 1))).toMatchObject({
      plan: 'basic',
      expires: null,
    });
  });

  it('an expired key is no valid credential beside a marketplace pair: the pair authorises alone, or the 401 names both forms', async () => {
    const hash = await sha256Hex('old-key');
    const store: KeyStore = new Map([[hash, { sha256: hash, plan: 'ultra', label: 'o', expires: '2026-01-01T00:00:00Z' }]]);
    const check = new CredentialCheck(store, { host: 'api.example', secret: 'proxy-secret' });
    const pair = { 'x-marketplace-key': 'subscriber', 'x-marketplace-host': 'api.example', 'x-marketplace-proxy-secret': 'proxy-secret' };
    expect(await check.caller(headers({ 'x-api-key': 'old-key', ...pair, 'x-marketplace-subscription': 'BASIC' }), NOW)).toMatchObject({
      plan: 'basic',
      quotaKey: null,
    });
    // The expired key as the pair's own key, and no valid subscription: refused, saying when the key expired.
    const refused = await refusalOf(() =>
      check.caller(headers({ 'x-api-key': 'old-key', 'x-marketplace-key': 'old-key', 'x-marketplace-host': 'api.example' }), NOW),
    );
    expect(refused?.message).toBe(
      'The credential sent in X-API-Key, and in the x-marketplace-key and x-marketplace-host pair is not valid: the key expired at 2026-01-01T00:00:00Z',
    );
  });
});
