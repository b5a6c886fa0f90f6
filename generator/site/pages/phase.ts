/**
 * Polynomial phase: `{ID}_Polynomial_Phase_Detector.html` (crypto) and `{ID}_Equities_Valuation.html` (equity).
 * Both are weekly; the reading's date is the last bar of the price series, not the bands' projected end.
 */
import { PageError } from '../errors.js';
import { loadChrome } from '../html.js';
import { MODELS } from '../models.js';
import { parsePrinted, sig8 } from '../numbers.js';
import { customRow, datesOf, lastPoint, readFigure, series, traceNamed, valueAt } from '../plotly.js';
import { PhaseReading, validated, type PageResult } from '../readings.js';

const NOT_PRINTED = /^(N\/A|—|-|)$/;

function fairValueAt(traces: Parameters<typeof traceNamed>[0], date: string, file: string): number | null {
  const fair = valueAt(series(traceNamed(traces, 'Polynomial Fair Value', file), file), date);
  return Number.isFinite(fair) ? sig8(fair) : null;
}

export function parseCryptoPhase(page: Buffer, file: string): PageResult {
  const fig = readFigure(page, file);
  const chrome = loadChrome(page, [fig], file);
  const end = lastPoint(series(traceNamed(fig.traces, 'Realized Price', file), file), file, 'trace "Realized Price"');
  const label = chrome.requireCard('Detected Market Phase').value;
  if (NOT_PRINTED.test(label)) throw new PageError(file, 'card "Detected Market Phase"', `expected a phase name, found "${label}"`);
  return {
    file,
    kind: 'crypto_phase',
    symbol: null,
    phase: validated(
      PhaseReading,
      {
        label,
        completion_pct: chrome.printed('Cycle Completion Matrix'),
        fair_value: fairValueAt(fig.traces, end.date, file),
        max_euphoria_target: chrome.printed('Max Euphoria Target (+3σ)'),
        as_of: end.date,
        as_of_basis: 'trace_end',
        model: MODELS.phaseCrypto,
        source_page: file,
      },
      file,
      'phase',
    ),
    identity: chrome.identity(),
  };
}

export function parseEquityValuation(page: Buffer, file: string): PageResult {
  const fig = readFigure(page, file);
  const chrome = loadChrome(page, [fig], file);
  const end = lastPoint(series(traceNamed(fig.traces, 'Weekly Spot', file), file), file, 'trace "Weekly Spot"');
  const label = chrome.requireCard('CURRENT PHASE').value;
  if (NOT_PRINTED.test(label)) throw new PageError(file, 'card "CURRENT PHASE"', `expected a phase name, found "${label}"`);
  const printedFair = chrome.card('FAIR VALUE');
  // The +3 sigma target is not printed here: it is the upper edge of the top zone at the last bar.
  const top = fig.traces.find((t) => t.name === 'Max Euphoria (+3σ)');
  let target: number | null = null;
  if (top?.customdata !== undefined) {
    const i = datesOf(top, file).lastIndexOf(end.date);
    const upper = i >= 0 ? customRow(top, i, file)[1] : undefined;
    target = upper !== undefined && Number.isFinite(upper) ? sig8(upper) : null;
  }
  return {
    file,
    kind: 'equity_valuation',
    symbol: null,
    phase: validated(
      PhaseReading,
      {
        label,
        completion_pct: chrome.printed('PHASE COMPLETION'),
        fair_value: printedFair ? parsePrinted(printedFair.value, file, 'card "FAIR VALUE"') : fairValueAt(fig.traces, end.date, file),
        max_euphoria_target: target,
        as_of: end.date,
        as_of_basis: 'trace_end',
        model: MODELS.phaseEquity,
        source_page: file,
      },
      file,
      'phase',
    ),
    identity: chrome.identity(),
  };
}
