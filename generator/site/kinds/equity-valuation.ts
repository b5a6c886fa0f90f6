/** `{ID}_Equities_Valuation.html`: the weekly equity phase, dated by the last bar of its `Weekly Spot` series. */
import { PageError } from '../errors.js';
import { loadChrome } from '../html.js';
import { defineKind } from '../kind.js';
import { notPrinted, parsePrinted, sig8 } from '../numbers.js';
import { fairValueAt } from '../phase-chart.js';
import { customRow, datesOf, lastPoint, readFigure, series, traceNamed, traceNamedIfAny } from '../plotly.js';
import { PhaseReading, validated } from '../readings.js';

export const equityValuation = defineKind({
  name: 'equity_valuation',
  published: { by: 'asset', assetClass: 'EQUITY', files: (id) => [`${id}_Equities_Valuation.html`] },
  readings: ['phase'],
  archive: false,
  cadence: 'weekly',
  parse(page, file) {
    const fig = readFigure(page, file);
    const chrome = loadChrome(page, [fig], file);
    const end = lastPoint(series(traceNamed(fig.traces, 'Weekly Spot', file), file), file, 'trace "Weekly Spot"');
    const label = chrome.requireCard('CURRENT PHASE').value;
    if (notPrinted(label)) throw new PageError(file, 'card "CURRENT PHASE"', `expected a phase name, found "${label}"`);
    const printedFair = chrome.card('FAIR VALUE');
    // The +3 sigma target is not printed here: it is the upper edge of the top zone at the last bar.
    const top = traceNamedIfAny(fig.traces, 'Max Euphoria (+3σ)', file);
    let target: number | null = null;
    if (top?.customdata !== undefined) {
      const i = datesOf(top, file).lastIndexOf(end.date);
      const upper = i >= 0 ? customRow(top, i, file)[1] : undefined;
      // Read at the last bar: a point there that is no number is refused, never published as null (decision 101).
      if (upper !== undefined && !Number.isFinite(upper))
        throw new PageError(
          file,
          'trace "Max Euphoria (+3σ)" customdata',
          `the upper edge at ${end.date} is ${upper}, not a finite number`,
        );
      target = upper === undefined ? null : sig8(upper);
    }
    return {
      phase: validated(
        PhaseReading,
        {
          label,
          completion_pct: chrome.printed('PHASE COMPLETION'),
          fair_value: printedFair ? parsePrinted(printedFair.value, file, 'card "FAIR VALUE"') : fairValueAt(fig.traces, end.date, file),
          max_euphoria_target: target,
          as_of: end.date,
          as_of_basis: 'trace_end',
          model: 'polynomial_phase_equity@1',
          source_page: file,
        },
        file,
        'phase',
      ),
      identity: chrome.identity(),
    };
  },
});
