/** The bench's printed table: numbers, verdicts and one load's line, shared by the full report and the paid one. */
import type { Load } from './load.js';

/** A load's baseline is valid when its server used at least this share of a core. */
export const FULL_CORE = 0.9;
/** Two servers loaded side by side on one core: each is measured when it had at least this share of it. */
export const HALF_CORE = FULL_CORE / 2;
/** Whether both servers of a side-by-side load had their share of the core. */
export const sharedFairly = (a: Load, b: Load) => a.server_cpu >= HALF_CORE && b.server_cpu >= HALF_CORE;

export const fixed = (x: number | null, d = 2) => (x === null ? '-' : x.toFixed(d));
export const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');
/** The server's share of a core, `!` where it ran short of `full` (FULL_CORE for a server loaded alone). */
export const cpu = (l: Load, full = FULL_CORE) => `${Math.round(100 * l.server_cpu)}%${l.server_cpu < full ? '!' : ''}`;
export const loadLine = (name: string, l: Load, full = FULL_CORE) =>
  `${name.padEnd(30)} ${fixed(l.rps, 0).padStart(7)}  ${fixed(l.p50, 2).padStart(6)}  ${fixed(l.p99, 2).padStart(7)}  ${cpu(l, full).padStart(5)}  ${fixed(l.server_us_per_request, 1).padStart(6)}  ${fixed(l.wrk_cpu * 100, 0).padStart(4)}%  ${l.status_errors}`;
