/** The envelope's two derived members, as_of and model_version: the build's files and the shim's cut pages share them. */
import { newest } from './time.js';

/** A reading as the envelope reads it: its model (name@version) and when it was published. */
export interface Stamped {
  model: string;
  as_of: string | null;
}

/** Readings whose as_of is a weekly bar's label, which can run ahead of publication: never the envelope's time. */
const WEEKLY_MODELS = /^(polynomial_phase_|sma_composite_equity)/;

/** An envelope's as_of: the newest daily reading's, or the newest weekly one's where there is no daily reading. */
export function envelopeAsOf(readings: Stamped[]): string | null {
  const daily = readings.filter((r) => !WEEKLY_MODELS.test(r.model));
  return newest((daily.length ? daily : readings).map((r) => r.as_of));
}

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
