/** The response envelope: as_of, model_version, the fixed disclaimer, data. */
import { DISCLAIMER } from '../contract/constants.js';

export { API_VERSION, DISCLAIMER } from '../contract/constants.js';

export interface Stamped {
  model: string;
  as_of: string | null;
}

import { newest } from '../contract/time.js';

export { instant, newest } from '../contract/time.js';

/** Readings whose as_of is a weekly bar's label, which can run ahead of publication: never the envelope's time. */
const WEEKLY_MODELS = /^(polynomial_phase_|sma_composite_equity)/;

/** Decision 16: one entry per model that produced a reading, keyed by name without version; null when none. */
export function modelVersion(
  readings: (Stamped | null | undefined)[],
  extra: (string | null | undefined)[] = [],
): Record<string, string> | null {
  const map = new Map<string, string>();
  for (const m of [...readings.map((r) => r?.model), ...extra]) {
    if (!m) continue;
    const [name, version] = m.split('@') as [string, string];
    map.set(name, version);
  }
  if (map.size === 0) return null;
  return Object.fromEntries([...map.entries()].sort(([a], [b]) => (a < b ? -1 : 1)));
}

export function envelope<T>(
  data: T,
  readings: (Stamped | null | undefined)[],
  extraModels: (string | null | undefined)[] = [],
): { as_of: string | null; model_version: Record<string, string> | null; disclaimer: typeof DISCLAIMER; data: T } {
  const present = readings.filter((r): r is Stamped => !!r);
  const daily = present.filter((r) => !WEEKLY_MODELS.test(r.model));
  return {
    as_of: newest((daily.length ? daily : present).map((r) => r.as_of)),
    model_version: modelVersion(present, extraModels),
    disclaimer: DISCLAIMER,
    data,
  };
}
