/** Equity sector indicators as the API publishes them, from the sector feed or a widget strip alike. */
import { FearGreedReading, MacroRiskReading, PeakValleyReading, validated, type SectorReadings } from './readings.js';

const MODEL = 'sector_indicators_equity@1';
const PROVIDER = 'site sector engine';

/** What both sources give of one universe's three indicators; labels, zones and statuses quoted as printed. */
export interface SectorParts {
  fg: number | null;
  fgLabel: string | null;
  sma: number | null;
  pv: number | null;
  zone: string | null;
  macro: number | null;
  status: string | null;
}

export function sectorReadings(parts: SectorParts, as_of: string, basis: 'page_stamp' | 'feed_generated_at', file: string): SectorReadings {
  const context = { scope: 'sector' as const, model: MODEL, as_of, as_of_basis: basis, source_page: file };
  return {
    fear_greed: validated(
      FearGreedReading,
      { value: parts.fg, label: parts.fgLabel, label_source: 'engine', sma_30: parts.sma, provider: PROVIDER, ...context },
      file,
      'fear_greed',
    ),
    peak_valley: validated(
      PeakValleyReading,
      { score: parts.pv, zone: parts.zone, series: 'leading_sector', ...context },
      file,
      'peak_valley',
    ),
    macro_risk: validated(MacroRiskReading, { score: parts.macro, status: parts.status, ...context }, file, 'macro_risk'),
  };
}
