/**
 * Step credential, alone: a known key is answered without waiting; a revoked key is refused at once; a key and a
 * marketplace pair sent together, both valid, give the higher plan (decision 28).
 */
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../../../auth-shim/sha256.js';
import { CredentialCheck } from '../../../auth-shim/steps/credential.js';
import type { KeyStore } from '../../../generator/contract/keys.js';
import { refusalOf } from './refusals.js';

const headers = (h: Record<string, string>) => new Headers(h);

describe('step: credential', () => {
  it('503 with no credential source, 401 for an unknown key', async () => {
    expect((await refusalOf(() => new CredentialCheck(null, {}).caller(headers({ 'x-api-key': 'k' }))))?.code).toBe(
      'gateway_not_configured',
    );
    const empty: KeyStore = new Map();
    expect((await refusalOf(() => new CredentialCheck(empty, {}).caller(headers({ 'x-api-key': 'k' }))))?.code).toBe('unauthorized');
  });

  it('a key is hashed once: its second request is answered synchronously; a reloaded store forgets it', async () => {
    const hash = await sha256Hex('secret-key');
    let store: KeyStore = new Map([[hash, { sha256: hash, plan: 'pro', label: 'a' }]]);
    const check = new CredentialCheck({ current: () => store }, {});
    const first = check.caller(headers({ 'x-api-key': 'secret-key' }));
    expect(first).toBeInstanceOf(Promise);
    expect(await first).toMatchObject({ plan: 'pro', id: `key:${hash.slice(0, 8)}` });
    expect(check.caller(headers({ 'x-api-key': 'secret-key' }))).toMatchObject({ plan: 'pro' });
    store = new Map();
    expect((await refusalOf(() => check.caller(headers({ 'x-api-key': 'secret-key' }))))?.code).toBe('unauthorized');
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
      expect(await check.caller(headers({ 'x-api-key': 'basic-key', ...pair('PRO') }))).toMatchObject({ plan: 'pro', quotaKey: null });
      expect(await check.caller(headers({ 'x-api-key': 'pro-key', ...pair('BASIC') }))).toMatchObject({
        plan: 'pro',
        quotaKey: `key:${pro}`,
      });
      expect(await check.caller(headers({ 'x-api-key': 'basic-key', ...pair('GOLD') }))).toMatchObject({
        plan: 'basic',
        quotaKey: `key:${basic}`,
      });
      expect(await check.caller(headers({ 'x-api-key': 'nobody', ...pair('ULTRA') }))).toMatchObject({ plan: 'ultra' });
    }
  });

  it('a key with whitespace around it is the same key, as Node hands it over, where a Workers runtime keeps it', async () => {
    const hash = await sha256Hex('spaced-key');
    const check = new CredentialCheck(new Map([[hash, { sha256: hash, plan: 'ultra', label: 's' }]]), {});
    // Headers as a runtime that does not trim values hands them over (the Fetch spec's Headers would trim).
    const raw = (h: Record<string, string>) => ({ get: (n: string) => h[n] ?? null, has: (n: string) => n in h }) as unknown as Headers;
    expect(await check.caller(raw({ 'x-api-key': 'spaced-key ' }))).toMatchObject({ plan: 'ultra' });
    expect(await check.caller(raw({ 'x-api-key': '\tspaced-key' }))).toMatchObject({ plan: 'ultra' });
  });
});
