/** `{ID}_Polynomial_Phase_Detector.html`: the weekly crypto phase, dated by the last bar of its price series. */
import { PageError } from '../errors.js';
import { loadChrome } from '../html.js';
import { defineKind } from '../kind.js';
import { notPrinted } from '../numbers.js';
import { fairValueAt } from '../phase-chart.js';
import { lastPoint, readFigure, series, traceNamed } from '../plotly.js';
import { PhaseReading, validated } from '../readings.js';

export const cryptoPhase = defineKind({
  name: 'crypto_phase',
  published: { by: 'asset', assetClass: 'CRYPTO', files: (id) => [`${id}_Polynomial_Phase_Detector.html`] },
  readings: ['phase'],
  archive: false,
  cadence: 'weekly',
  parse(page, file) {
    const fig = readFigure(page, file);
    const chrome = loadChrome(page, [fig], file);
    const end = lastPoint(series(traceNamed(fig.traces, 'Realized Price', file), file), file, 'trace "Realized Price"');
    const label = chrome.requireCard('Detected Market Phase').value;
    if (notPrinted(label)) throw new PageError(file, 'card "Detected Market Phase"', `expected a phase name, found "${label}"`);
    return {
      phase: validated(
        PhaseReading,
        {
          label,
          completion_pct: chrome.printed('Cycle Completion Matrix'),
          fair_value: fairValueAt(fig.traces, end.date, file),
          max_euphoria_target: chrome.printed('Max Euphoria Target (+3σ)'),
          as_of: end.date,
          as_of_basis: 'trace_end',
          model: 'polynomial_phase_crypto@1',
          source_page: file,
        },
        file,
        'phase',
      ),
      identity: chrome.identity(),
    };
  },
});
