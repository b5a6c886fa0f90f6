/**
 * The key store at the edge: the key file itself (decision 12 format, with `created` and `expires` as the keys
 * commands write them) stored as the value `keys.json` of a Workers KV namespace, read at run time. Issuing or
 * revoking a key is `keys add` / `keys revoke` on the file, then pushing the file (`npm run edge:keys`): no
 * redeploy. What a key's record means (its plan, its expiry) is decided by the shared credential code, as on Node.
 *
 * Each isolate holds the parsed store and reads the value again in the background once its copy is older than
 * `refreshMs`, so a request waits on KV only in an isolate that has no store yet. A value that no longer parses
 * leaves the previous store in force, and the log says why (as the Node server does with its key file).
 */
import { keyStoreFromJson, type KeyStore } from './credentials.js';
import type { KeySource } from './steps/credential.js';

/** The value's name in the namespace. */
export const KEYS_ENTRY = 'keys.json';

/** How old an isolate's copy may get before it reads the value again. */
export const KEYS_REFRESH_MS = 5_000;

/** The part of the Workers runtime's KV namespace binding used here. */
export interface KvNamespaceLike {
  get(key: string, options: { type: 'text'; cacheTtl?: number }): Promise<string | null>;
}

export class KvKeys implements KeySource {
  private store: KeyStore | null = null;
  private text: string | null | undefined;
  private readAt = -Infinity;
  private reading: Promise<void> | undefined;

  constructor(
    private kv: KvNamespaceLike,
    private log: (message: string) => void,
    private refreshMs = KEYS_REFRESH_MS,
  ) {}

  current(): KeyStore | null {
    return this.store;
  }

  /**
   * The store, read again when the copy in hand is older than `refreshMs`. Resolves at once when there is a copy
   * (the read goes on in `background`, the runtime's waitUntil); waits for the read in an isolate that has none.
   */
  refresh(now: number, background: (work: Promise<unknown>) => void): Promise<void> | undefined {
    if (now - this.readAt < this.refreshMs) return undefined;
    if (!this.reading) {
      this.readAt = now;
      this.reading = this.read().finally(() => (this.reading = undefined));
    }
    if (this.text !== undefined) return void background(this.reading);
    return this.reading;
  }

  private async read(): Promise<void> {
    let text: string | null;
    try {
      // KV's own edge cache holds the value a minute: the least it allows, and what its propagation takes anyway.
      text = await this.kv.get(KEYS_ENTRY, { type: 'text', cacheTtl: 60 });
    } catch (e) {
      this.log(`keys: KV ${KEYS_ENTRY} cannot be read (${(e as Error).message}); keeping the previous ${this.store?.size ?? 0} keys`);
      // An isolate with no store yet asks again at its next request.
      if (this.text === undefined) this.readAt = -Infinity;
      return;
    }
    if (text === this.text) return;
    try {
      // An absent value is no key store: data endpoints answer 503 gateway_not_configured, as with no --keys.
      this.store = text === null ? null : parsed(text);
      if (this.text !== undefined) this.log(`keys: reloaded KV ${KEYS_ENTRY} (${this.store?.size ?? 0} keys)`);
    } catch (e) {
      this.log(`keys: ${(e as Error).message}; keeping the previous ${this.store?.size ?? 0} keys`);
    }
    this.text = text;
  }
}

function parsed(text: string): KeyStore {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new Error(`KV ${KEYS_ENTRY}: not JSON (${(e as Error).message})`, { cause: e });
  }
  return keyStoreFromJson(json, `KV ${KEYS_ENTRY}`);
}
