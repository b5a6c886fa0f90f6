/**
 * Step: usage. `GET /v1/usage` (decision 36): the caller's plan, limits and counts, answered from the charge the
 * quota step just made (counted in the minute, not the month), so one call tells a customer where it stands.
 * `Cache-Control: no-store`: the counts change with every request.
 */
import { usageBody } from '../../generator/contract/index.js';
import type { Caller } from '../credentials.js';
import type { ShimResponse } from '../exchange.js';
import { uncachedJson } from '../representation.js';
import type { Charged } from './quota.js';

export function usageResponse(caller: Caller, c: Charged, headers: Record<string, string>): ShimResponse {
  const body = usageBody(
    {
      plan: caller.plan,
      credential: caller.quotaKey ? caller.id : 'marketplace',
      label: caller.label,
      expires: caller.expires,
      limits: caller.limits,
    },
    c && {
      minuteUsed: c.admission.minuteUsed,
      resetMs: c.admission.resetMs,
      monthUsed: c.admission.monthUsed,
      monthStart: c.month.start,
      monthEnd: c.month.end,
    },
  );
  return uncachedJson(200, body, headers);
}
