/**
 * The body of `GET /v1/usage` (decision 36): the caller's plan, limits and counts in one envelope, with `as_of` and
 * `model_version` null (it holds no reading). The shim answers with it and the build's example is made by it.
 */
import { DISCLAIMER } from './constants.js';
import { PLAN_LIMITS, type Plan } from './plans.js';
import type { UsageResponse } from './shapes.js';

/** Who is asking, as the credential step found it. */
export interface UsageCaller {
  plan: Plan;
  /** `key:` and the first 8 hex digits of the key's SHA-256, or `marketplace` (decision 36). */
  credential: string;
  label: string | null;
  /** The key's `expires` as the key file has it (decision 37), or null. */
  expires: string | null;
  /** The limits in effect (decision 106): the key's own where it has them; absent, the plan's. */
  limits?: { perMinute: number; perMonth: number };
}

/** Where the caller's counts stand after this call was counted; null for a caller the marketplace counts. */
export interface Standing {
  /** Requests in the rolling minute, this one included. */
  minuteUsed: number;
  /** Until the oldest of them leaves the minute. */
  resetMs: number;
  /** Requests this calendar month (this call is not one of them). */
  monthUsed: number;
  monthStart: number;
  monthEnd: number;
}

/** An instant as the API writes it: UTC, to the second unless it has a fraction. */
const instant = (ms: number) => new Date(ms).toISOString().replace(/\.000Z$/, 'Z');

export function usageBody(caller: UsageCaller, standing: Standing | null): UsageResponse {
  const limits = caller.limits ?? PLAN_LIMITS[caller.plan];
  const expires = caller.expires === null ? NaN : Date.parse(caller.expires);
  return {
    as_of: null,
    model_version: null,
    disclaimer: DISCLAIMER,
    data: {
      plan: caller.plan,
      credential: caller.credential,
      label: caller.label,
      expires_at: Number.isFinite(expires) ? instant(expires) : null,
      limits: { per_minute: limits.perMinute, per_month: limits.perMonth },
      minute: standing && {
        used: standing.minuteUsed,
        remaining: Math.max(0, limits.perMinute - standing.minuteUsed),
        reset_seconds: Math.max(0, Math.ceil(standing.resetMs / 1000)),
      },
      month: standing && {
        period: new Date(standing.monthStart).toISOString().slice(0, 7),
        used: standing.monthUsed,
        remaining: Math.max(0, limits.perMonth - standing.monthUsed),
        resets_at: instant(standing.monthEnd),
      },
    },
  };
}
