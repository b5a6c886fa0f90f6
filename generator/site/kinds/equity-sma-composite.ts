/** `{ID}_Composite_SMA_Risk.html`: the weekly 20/100/200-week composite (0-1 on the page, x100 in the API). */
import { defineKind } from '../kind.js';
import { tenthBand } from '../models.js';
import { round2, sig8 } from '../numbers.js';
import { dateAt, lastPoint, readFigure, series, traceNamed } from '../plotly.js';
import { SmaReading, validated, type Archive } from '../readings.js';

export const equitySmaComposite = defineKind({
  name: 'equity_sma_composite',
  published: { by: 'asset', assetClass: 'EQUITY', files: (id) => [`${id}_Composite_SMA_Risk.html`] },
  readings: ['sma_composite'],
  archive: true,
  cadence: 'weekly',
  parse(page, file, { archive: mine }) {
    const fig = readFigure(page, file);
    const composite = series(traceNamed(fig.traces, 'Normalized Composite Risk', file), file);
    const end = lastPoint(composite, file, 'trace "Normalized Composite Risk"');
    const page_value = sig8(end.value);
    const archive: Archive | undefined = mine ? {} : undefined;
    if (archive)
      composite.values.forEach((v, i) => {
        // Weekly bars are already labelled by their closing Sunday.
        if (Number.isFinite(v)) archive[dateAt(composite, i)] = { sma_composite: round2(v * 100) };
      });
    return {
      sma_composite: validated(
        SmaReading,
        {
          score: round2(page_value * 100),
          page_value,
          band: tenthBand(page_value),
          as_of: end.date,
          as_of_basis: 'trace_end',
          model: 'sma_composite_equity@1',
          source_page: file,
        },
        file,
        'sma_composite',
      ),
      archive,
    };
  },
});
