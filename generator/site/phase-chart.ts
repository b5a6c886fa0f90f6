/** What both polynomial phase pages (crypto and equity) draw alike: the fair value line, read where it is not printed. */
import { sig8 } from './numbers.js';
import { series, traceNamed, valueAt, type Trace } from './plotly.js';

/** The `Polynomial Fair Value` trace at `date` (the last bar of the price series, not the bands' projected end). */
export function fairValueAt(traces: Trace[], date: string, file: string): number | null {
  const fair = valueAt(series(traceNamed(traces, 'Polynomial Fair Value', file), file), date);
  return Number.isFinite(fair) ? sig8(fair) : null;
}
