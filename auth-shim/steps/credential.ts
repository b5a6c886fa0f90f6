/**
 * Step: credential. Who is calling (decisions 12, 13 and 37): a direct key or a marketplace pair, or a refusal
 * (503 when the gateway has no credential source at all, 401 otherwise, an expired key's saying when it expired).
 *
 * Verdicts are kept by exact header value, each computed once (a key's SHA-256, a secret's constant-time
 * compare) and bounded, so neither path hashes on every request; a key store that changes (a revoked key)
 * empties them. The caller object is built once per key, so a known key costs one map lookup and one comparison
 * with the request's time: a kept verdict never outlives the key's expiry, with or without a key-file change.
 */
import {
  pairKeyHeaders,
  credentialHeader,
  triedForms,
  constantTimeEqual,
  expired,
  identify,
  keyCaller,
  type Caller,
  type KeyForm,
  type KeyStore,
  type MarketplaceConfig,
  type Verifier,
} from '../credentials.js';
import type { HeaderSource } from '../exchange.js';
import { next, type Maybe } from '../maybe.js';
import { sha256Hex } from '../sha256.js';
import { Refusal } from '../refusal.js';

/** A key store that may change while the shim runs (a reloaded key file): read at every request. */
export interface KeySource {
  current(): KeyStore | null;
}

// 100,000 entries of a key and a small object: some tens of MB at most, and a fleet's worth of customers.
const MAX_VERDICTS = 100_000;
const bounded = <T extends Map<string, unknown>>(m: T) => (m.size >= MAX_VERDICTS && m.clear(), m);

export class CredentialCheck implements Verifier {
  private readonly source: KeySource;
  /**
   * Each key judged against the store, by the header it came in: its caller, or null for no key of the store. Kept
   * apart so that a marketplace's subscribers, whose keys are mostly not ours, are looked up among themselves, not
   * in a table of every direct key (a lookup in a large table costs the Node server a cache miss per request).
   */
  private readonly verdicts: Record<KeyForm, Map<string, Caller | null>> = { direct: new Map(), pair: new Map() };
  private readonly secrets = new Map<string, boolean>();
  private store: KeyStore | null | undefined;
  private readonly pairKeys: string[];

  constructor(
    keys: KeyStore | KeySource | null,
    private readonly marketplace: MarketplaceConfig,
  ) {
    this.source = keys && 'current' in keys ? keys : { current: () => keys as KeyStore | null };
    this.pairKeys = pairKeyHeaders(marketplace);
  }

  /** The caller behind the request's headers at `now` (ms). Synchronous for credentials judged before. */
  caller(headers: HeaderSource, now: number): Maybe<Caller> {
    if (this.keysNow() === null && !this.marketplace.secret)
      throw new Refusal('gateway_not_configured', 'No credential source is configured on this gateway');
    const direct = credentialHeader(headers, 'x-api-key');
    // A known key alone is answered at once; with a marketplace pair beside it, the higher plan applies (decision 28).
    const hit = direct && !this.pairKeys.some((h) => headers.has(h)) ? this.verdicts.direct.get(direct) : undefined;
    if (hit && !expired(hit, now)) return hit;
    return next(identify(headers, this.marketplace, this, now), (caller) => admitted(caller, now, headers, this.marketplace));
  }

  lookup(key: string, form: KeyForm): Maybe<Caller | null> {
    const verdicts = this.verdicts[form];
    const hit = verdicts.get(key);
    const store = this.store;
    if (hit !== undefined || !store) return hit ?? null;
    return sha256Hex(key).then((hash) => {
      if (store !== this.store) return null; // reloaded meanwhile: the next request asks the new store
      const rec = store.get(hash);
      const caller = rec ? keyCaller(rec) : null;
      bounded(verdicts).set(key, caller);
      return caller;
    });
  }

  secret(value: string): Maybe<boolean> {
    const hit = this.secrets.get(value);
    if (hit !== undefined) return hit;
    return constantTimeEqual(value, this.marketplace.secret ?? '').then((ok) => (bounded(this.secrets).set(value, ok), ok));
  }

  private keysNow(): KeyStore | null {
    const s = this.source.current();
    if (s !== this.store) {
      this.verdicts.direct.clear();
      this.verdicts.pair.clear();
      this.store = s;
    }
    return s;
  }
}

/** The challenge of every 401 (decision 33): the direct key is the credential a client can always send. */
const CHALLENGE = { 'WWW-Authenticate': 'ApiKey header="X-API-Key"' };

/**
 * 401 unless a valid caller was found; the message names the header forms the request tried (decision 33), and for
 * an expired key when it expired, never the key nor its label (decision 37).
 */
function admitted(caller: Caller | null, now: number, headers: HeaderSource, marketplace: MarketplaceConfig): Caller {
  if (caller && !expired(caller, now)) return caller;
  const tried = triedForms(headers, marketplace);
  const when = caller && `: the key expired at ${new Date(caller.expiry).toISOString().replace('.000Z', 'Z')}`;
  throw new Refusal(
    'unauthorized',
    tried.length
      ? `The credential sent in ${tried.join(', and in ')} is not valid${when ?? ''}`
      : 'A valid X-API-Key header, or the x-marketplace-key and x-marketplace-host pair, is required',
    CHALLENGE,
  );
}
