/** Plans and their limits (spec "Limits", decisions 1, 5, 9). The shim enforces them; the build shapes files by them. */
export const PLANS = ['basic', 'pro', 'ultra'] as const;
export type Plan = (typeof PLANS)[number];

export const PLAN_LIMITS: Record<Plan, { perMonth: number; perMinute: number; historyCap: number; bulk: boolean }> = {
  basic: { perMonth: 1_000, perMinute: 5, historyCap: 90, bulk: false },
  pro: { perMonth: 50_000, perMinute: 20, historyCap: 1_000, bulk: true },
  ultra: { perMonth: 500_000, perMinute: 60, historyCap: 1_000, bulk: true },
};

/**
 * The highest limits a key's own terms may set (decision 106): far above any plan's, and within what the quota
 * stores count and the usage document's bounds allow.
 */
export const KEY_LIMIT_MAX = { perMinute: 100_000, perMonth: 1_000_000_000 } as const;
/** The most a key's `meta` may take, serialised as JSON (decision 106). */
export const KEY_META_MAX_BYTES = 1_024;

export const HISTORY_DEFAULT_LIMIT = 365;
export const HISTORY_MAX_LIMIT = 1_000;
export const BULK_MAX_SYMBOLS = 25;
export const FREE_TIER_SIZE = 10;
export const FREE_TIER_RULE = `Crypto assets whose market-cap rank on the site's daily ranking is among the ${FREE_TIER_SIZE} smallest (rank at most 10 among the assets served), recomputed at each refresh.`;

/** The history pages the build writes ahead: the default limit for paid plans, and the free cap for basic. */
export const PRECOMPUTED_PAGES = [
  { limit: HISTORY_DEFAULT_LIMIT, maxLimit: PLAN_LIMITS.pro.historyCap },
  { limit: PLAN_LIMITS.basic.historyCap, maxLimit: PLAN_LIMITS.basic.historyCap },
] as const;
