/** Decision 2: every error code with its status, and decision 3: the error body. */
import { DISCLAIMER } from './constants.js';

export const ERROR_STATUS = {
  bad_symbol: 400,
  bad_universe: 400,
  bad_parameter: 400,
  too_many_symbols: 400,
  unauthorized: 401,
  plan_required: 403,
  not_found: 404,
  unknown_asset: 404,
  unknown_universe: 404,
  no_signal: 404,
  method_not_allowed: 405,
  rate_limited: 429,
  quota_exceeded: 429,
  upstream_error: 502,
  gateway_not_configured: 503,
} as const;
export type ErrorCode = keyof typeof ERROR_STATUS;

/** Exactly `{ error: { code, message }, disclaimer }` (decision 3). */
export const errorBody = (code: ErrorCode, message: string) => ({ error: { code, message }, disclaimer: DISCLAIMER });
