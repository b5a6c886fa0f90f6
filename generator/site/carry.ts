/**
 * What a page that failed under --keep-going keeps (decision 103): each of its readings' part of the field the
 * previous tree published, as the reading's `carry` says (site/readings.ts). Computed once, by the read step; the
 * plan publishes exactly it, and the report names it.
 */
import type { AssetRisk } from '../contract/shapes.js';
import { READINGS, type AssetReading, type ReadingKey } from './readings.js';

/** Each reading of a failed page, as the previous tree published its part of the field. */
export type Carried = Partial<Record<ReadingKey, object>>;

/** The previous AssetRisk's part of each reading a failed page yields, where it had one (market readings are carried elsewhere). */
export function carriedFrom(prev: AssetRisk | undefined, readings: Iterable<ReadingKey>): Carried {
  const carried: Carried = {};
  for (const key of readings) {
    const reading = READINGS[key] as AssetReading | { scope: 'market' };
    if (reading.scope !== 'asset') continue;
    const previous = prev?.[reading.field];
    if (previous !== null && previous !== undefined) carried[key] = reading.carry(previous as never) as object;
  }
  return carried;
}
