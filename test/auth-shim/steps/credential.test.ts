/** Step credential, alone: a known key is answered without waiting; a revoked key is refused at once. */
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../../../auth-shim/credentials.js';
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
});
