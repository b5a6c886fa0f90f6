/** The site's published wordings and bands that the parsers attach to readings. */
import { gravityBandIndex } from '../contract/constants.js';

const VERDICTS = {
  CRYPTO: [
    'historically an accumulation zone, well below past tops',
    'historically a mid-cycle zone, not a top',
    'historically a late-cycle zone, above the mid-point',
    'historically a cycle-top zone, where past peaks formed',
  ],
  EQUITY: [
    'historically an accumulation band',
    'historically a mid-range band',
    'historically a late-cycle band',
    'historically the stretch that has marked tops',
  ],
} as const;

/** Gravity verdict by score: one per band of the contract's GRAVITY_BANDS. */
export function verdict(score: number, assetClass: 'CRYPTO' | 'EQUITY'): string {
  return VERDICTS[assetClass][gravityBandIndex(score) as 0 | 1 | 2 | 3];
}

/** Tenth band `a-b` of a 0-1 value, as the pages name their band traces. */
export function tenthBand(x: number): string {
  const i = Math.min(9, Math.max(0, Math.floor(x * 10 + 1e-9)));
  return `${(i / 10).toFixed(1)}-${((i + 1) / 10).toFixed(1)}`;
}

export const bandMidpoint = (band: string): number => {
  const [a, b] = band.split('-').map(Number) as [number, number];
  return Math.round(((a + b) / 2) * 1000) / 1000;
};
