/**
 * Standard Webhooks v1 (decision 108): a message's headers, signed with the `standardwebhooks` library, so what we
 * sign is what its verifier, in the customer's code, checks. A rotated secret signs beside the new one until its
 * time is up: the header then holds two signatures, and a receiver holding either accepts the message.
 */
import { Webhook } from 'standardwebhooks';
import type { Secret } from './store.js';

/** The user agent every delivery names. */
const USER_AGENT = 'risk-readings-webhooks/1';

/** A new signing secret: `whsec_` and 32 random bytes in base64. */
export function newSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return `whsec_${btoa(String.fromCharCode(...bytes))}`;
}

/** The secrets that sign at `now`: the current one and any rotated one still within its time. */
const signingSecrets = (secrets: readonly Secret[], now: number): Secret[] => secrets.filter((s) => s.until === null || s.until > now);

/** The headers of one delivery of `body` as message `id` at `now`. */
export function signedHeaders(id: string, body: string, secrets: readonly Secret[], now: number): Record<string, string> {
  const at = new Date(now);
  const signatures = signingSecrets(secrets, now).map((s) => new Webhook(s.key).sign(id, at, body));
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(now / 1000)),
    'webhook-signature': signatures.join(' '),
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
  };
}
