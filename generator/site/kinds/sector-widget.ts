/**
 * `widget_{ai,quantum,bitcoin_equities,markets}_indicators.html`: one equity universe's sector indicators as its
 * widget strip shows them (the marker's 1-decimal value, rounded SMA and macro score), dated by the market close.
 */
import { PageError } from '../errors.js';
import { loadChrome } from '../html.js';
import { defineKind } from '../kind.js';
import { parsePrinted } from '../numbers.js';
import { sectorReadings } from '../sector.js';
import { parseDate } from '../stamps.js';

/** Each strip's file and the universe it shows (`markets` is us_stock_market). */
const UNIVERSE_OF: Record<string, string> = {
  'widget_ai_indicators.html': 'ai_infrastructure',
  'widget_quantum_indicators.html': 'quantum',
  'widget_bitcoin_equities_indicators.html': 'bitcoin_equities',
  'widget_markets_indicators.html': 'us_stock_market',
};

export const sectorWidget = defineKind({
  name: 'sector_widget',
  published: { by: 'market', files: Object.keys(UNIVERSE_OF) },
  readings: ['sectors'],
  archive: false,
  cadence: 'daily',
  parse(page, file) {
    const universe = UNIVERSE_OF[file];
    if (!universe) throw new PageError(file, 'file name', 'not a known sector widget');
    const { $ } = loadChrome(page, [], file);
    const tile = (kind: string) => {
      const t = $(`article.tile-${kind}`).first();
      if (t.length === 0) throw new PageError(file, `tile "${kind}"`, 'absent from the strip');
      return t;
    };
    // Labels are quoted as printed, never checked against a list: the strips have printed new ones from week to week.
    const pill = (kind: string) => {
      const text = tile(kind).find('.pill').first().text().trim();
      return text === '' ? null : text;
    };
    const fg = tile('fear_greed');
    const marker = /left:\s*([0-9.]+)%/.exec(fg.find('.meter-marker').attr('style') ?? '');
    const foot = /30-day average\s+(\S+)/.exec(fg.find('.tile-foot').text());
    const close = /market close\s+(\S+)/.exec($('.strip-foot').text());
    if (!close) throw new PageError(file, 'strip foot "market close"', 'absent');
    return {
      sectors: {
        [universe]: sectorReadings(
          {
            fg: marker
              ? parsePrinted(marker[1], file, 'tile "fear_greed" marker')
              : parsePrinted(fg.find('.score').text(), file, 'tile "fear_greed" score'),
            fgLabel: pill('fear_greed'),
            sma: foot ? parsePrinted(foot[1], file, 'tile "fear_greed" 30-day average') : null,
            pv: parsePrinted(tile('peak_valley').find('.score').text(), file, 'tile "peak_valley" score'),
            zone: pill('peak_valley'),
            macro: parsePrinted(tile('macro_risk').find('.score').text(), file, 'tile "macro_risk" score'),
            status: pill('macro_risk'),
          },
          parseDate(close[1], file, 'strip foot "market close"'),
          'page_stamp',
          file,
        ),
      },
    };
  },
});
