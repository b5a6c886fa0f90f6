/** The response envelope: as_of, model_version, the fixed disclaimer, data. */
import { DISCLAIMER } from '../contract/constants.js';
import { envelopeAsOf, modelVersion, type Stamped } from '../contract/envelope.js';

export { API_VERSION, DISCLAIMER } from '../contract/constants.js';
export { modelVersion, type Stamped } from '../contract/envelope.js';
export { newest } from '../contract/time.js';

export function envelope<T>(
  data: T,
  readings: (Stamped | null | undefined)[],
  extraModels: (string | null | undefined)[] = [],
): { as_of: string | null; model_version: Record<string, string> | null; disclaimer: typeof DISCLAIMER; data: T } {
  const present = readings.filter((r): r is Stamped => !!r);
  return {
    as_of: envelopeAsOf(present),
    model_version: modelVersion(present, extraModels),
    disclaimer: DISCLAIMER,
    data,
  };
}
