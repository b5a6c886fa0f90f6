/**
 * Step: usage. `GET /v1/usage` (decision 36): the caller's plan, limits and counts, answered from the charge the
 * quota step just made (counted in the minute, not the month), so one call tells a customer where it stands.
 * `Cache-Control: no-store`: the counts change with every request.
 */
import { toJson, usageBody } from '../../generator/contract/index.js';
import type { Caller } from '../credentials.js';
import type { ShimResponse } from '../exchange.js';
import { JSON_TYPE } from '../representation.js';
import type { Charged } from './quota.js';

const encoder = new TextEncoder();

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
  const bytes = encoder.encode(toJson(body)) as Uint8Array<ArrayBuffer>;
  return {
    status: 200,
    headers: { 'Content-Type': JSON_TYPE, 'Content-Length': String(bytes.byteLength), 'Cache-Control': 'no-store', ...headers },
    body: bytes,
    code: null,
  };
}
