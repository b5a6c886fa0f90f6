/**
 * A client that behaves, as a customer would write it with openapi-fetch (an example, not product code:
 * docs/shim.md and the served guide's "Rate limits and retries" point here). `retryAfter` waits out a 429's or a
 * 503's `Retry-After` and tries once more, never longer than it was told it may wait; `rateLimits` reads where each
 * window stands from the IETF fields the shim sends (`RateLimit-Policy` and `RateLimit`, RFC 8941 lists).
 * generated-client.test.ts compiles it strictly beside the generated types and runs it against the shim on a clock
 * the test moves.
 */
import type { Middleware } from 'openapi-fetch';
import { parseList } from 'structured-headers';

export interface RetryOptions {
  /** Tries after the first: 1 by default. */
  retries?: number;
  /** A longer `Retry-After` is not waited out: the answer goes to the caller as it is. 120 s by default. */
  maxWaitSeconds?: number;
  /** How to wait; `setTimeout` by default. */
  sleep?: (ms: number) => Promise<void>;
}

const timer = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** On a 429 or 503 with `Retry-After` (in seconds), waits that long and sends the request again, at most `retries` times. */
export function retryAfter({ retries = 1, maxWaitSeconds = 120, sleep = timer }: RetryOptions = {}): Middleware {
  return {
    async onResponse({ request, response, options }) {
      let answer = response;
      for (let tried = 0; tried < retries && (answer.status === 429 || answer.status === 503); tried++) {
        const seconds = Number(answer.headers.get('retry-after'));
        if (!Number.isInteger(seconds) || seconds < 0 || seconds > maxWaitSeconds) break;
        await answer.body?.cancel();
        await sleep(seconds * 1000);
        answer = await options.fetch(new Request(request));
      }
      return answer;
    },
  };
}

/** One window of the rate limit: its quota and length, what it still admits and the seconds until it resets. */
export interface Window {
  quota: number;
  windowSeconds: number;
  remaining: number;
  resetSeconds: number;
}

/** Each policy's window by its name ("minute", "month"), or an empty map when the answer carries no such fields. */
export function rateLimits(headers: Headers): Map<string, Window> {
  const list = (name: string) => {
    const value = headers.get(name);
    const members = value === null ? [] : parseList(value);
    return new Map(members.map(([item, params]) => [String(item), (key: string) => Number(params.get(key))]));
  };
  const [policies, limits] = [list('ratelimit-policy'), list('ratelimit')];
  const windows = new Map<string, Window>();
  for (const [name, policy] of policies) {
    const limit = limits.get(name);
    if (limit) windows.set(name, { quota: policy('q'), windowSeconds: policy('w'), remaining: limit('r'), resetSeconds: limit('t') });
  }
  return windows;
}
