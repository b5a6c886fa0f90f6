/** What both polynomial phase pages (crypto and equity) draw alike: the fair value line, read where it is not printed. */
import { sig8 } from './numbers.js';
import { pointAt, series, traceNamed, type Trace } from './plotly.js';

/**
 * The `Polynomial Fair Value` trace at `date` (the last bar of the price series, not the bands' projected end): null
 * where the line has no point that day, refused where its point there is no number (decision 101).
 */
export function fairValueAt(traces: Trace[], date: string, file: string): number | null {
  const fair = pointAt(series(traceNamed(traces, 'Polynomial Fair Value', file), file), date, file, 'trace "Polynomial Fair Value"');
  return fair === null ? null : sig8(fair);
}
