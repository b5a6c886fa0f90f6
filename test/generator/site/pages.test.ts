/**
 * Each parser on fixture pages, checked against values computed independently from the same synthetic price
 * path with the synthesizer's model code: the typed arrays and cards must decode to exactly these numbers.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { CATALOG, tempDir } from '../../helpers.js';
import { pageFiles, siteContext, writeSite, FEED_UNIVERSES } from '../../../fixtures/synth/site.js';
import { cryptoPhaseLabel } from '../../../fixtures/synth/pages/crypto.js';
import { EQUITY_EPOCH, zoneOf } from '../../../fixtures/synth/pages/equity.js';
import { fngSeries, fngStep, pvZone, ranking, sectorReading } from '../../../fixtures/synth/pages/market.js';
import { pathFrom, weeklyMeans } from '../../../fixtures/synth/market.js';
import {
  dcaRegression,
  levelOfScore,
  phaseModel,
  rollingMean,
  smaComposite,
  smaRisk,
  tenthBand,
  twapGravity,
  twapRiskLevels,
} from '../../../fixtures/synth/models.js';
import { isoOf } from '../../../fixtures/synth/calendar.js';
import { CURRENT, PUBLICATIONS, type Markup } from '../../../fixtures/synth/markup.js';
import { parseAs } from '../../../generator/site/parse-page.js';
import { sig8 } from '../../../generator/site/numbers.js';
import type { PageResult } from '../../../generator/site/readings.js';
import type { PageKind } from '../../../generator/site/registry.js';

const root = tempDir('rr-pages-');
const SYMBOLS = ['BTC', 'ETH', 'AERO', 'SPY', 'MSTR', 'NVDA'];
const ctx = siteContext({ day: 1 });
const asset = (s: string) => CATALOG.find((a) => a.symbol === s)!;
const fixed = (x: number, d: number) => Number(x.toFixed(d));

/** Our default markup and each stored publication's (fixtures/synth/markup.ts): every parser reads every one alike. */
const MARKUPS: [string, Markup][] = [['default', CURRENT], ...Object.entries(PUBLICATIONS)];

beforeAll(async () => {
  for (const [name, markup] of MARKUPS) await writeSite({ out: join(root, name), day: 1, symbols: SYMBOLS, catalog: CATALOG, markup });
});

describe.each(MARKUPS)('%s markup', (name, markup) => {
  const dir = join(root, name);
  function parse(kind: PageKind, file: string): PageResult {
    return parseAs(kind, readFileSync(join(dir, file)), file, true);
  }
  const fileOf = (s: string, kind: PageKind) => pageFiles(asset(s))[kind]!;
  /** The label of the weekly bar a crypto phase page ends on, as the markup writes it. */
  const phaseBar = (day: number) => isoOf(markup.phaseBar === 'monday' ? day + 1 : day);

  describe('crypto pages', () => {
    it('Gravity page: score, level from the card colour, TWAP, premium, stamp, price from the trace', () => {
      const path = ctx.path(asset('BTC'));
      const g = twapGravity(path.prices);
      const last = path.prices.length - 1;
      const r = parse('crypto_gravity', 'BTC_Price_TWAP_Gravity_Analysis.html');
      expect(r.gravity).toMatchObject({
        score: fixed(g.gravity[last]!, 1),
        risk_level: levelOfScore(g.gravity[last]!),
        as_of: `${isoOf(ctx.day)}T23:58:00Z`,
        as_of_basis: 'page_stamp',
        model: 'twap_gravity_crypto@1',
        source_page: 'BTC_Price_TWAP_Gravity_Analysis.html',
      });
      expect(r.gravity!.risk_level).toBe(Math.min(10, Math.floor(r.gravity!.score / 10) + 1));
      expect(r.twap).toMatchObject({ baseline: Math.round(g.twap[last]!), premium_pct: fixed(g.premium[last]! * 100, 2) });
      expect(r.price).toMatchObject({ value: sig8(path.prices[last]!), date: isoOf(path.days[last]!) });
    });

    it('Gravity page for an id with a numeric suffix (AERO29270) and a sub-$1,000 price', () => {
      const path = ctx.path(asset('AERO'));
      const last = path.prices.length - 1;
      const r = parse('crypto_gravity', fileOf('AERO', 'crypto_gravity'));
      expect(fileOf('AERO', 'crypto_gravity')).toBe('AERO29270_Price_TWAP_Gravity_Analysis.html');
      expect(r.price!.value).toBe(sig8(path.prices[last]!));
      expect(r.gravity!.score).toBe(fixed(twapGravity(path.prices).gravity[last]!, 1));
    });

    it('TWAP risk page: the separate 1-10 level and its weekly premium series', () => {
      const path = ctx.path(asset('BTC'));
      const g = twapGravity(path.prices);
      const levels = twapRiskLevels(path.prices, g.twap);
      const r = parse('crypto_twap_risk', 'BTC_Price_TWAP_Risk_Analysis.html');
      expect(r.twap_risk).toMatchObject({
        risk_level: levels[levels.length - 1],
        as_of: `${isoOf(ctx.day)}T23:57:00Z`,
        risk_level_model: 'twap_risk_level_crypto@1',
      });
      // A Sunday deep in the past: the archive holds that day's customdata premium and level.
      const i = path.days.findIndex((d) => isoOf(d) === '2019-06-02');
      expect(r.archive!['2019-06-02']).toEqual({ twap_risk_level: levels[i], twap_premium_pct: fixed(g.premium[i]! * 100, 2) });
    });

    it('20-week SMA page: printed 0-1 risk, x100 score, the band trace holding the last date', () => {
      const path = ctx.path(asset('ETH'));
      const { risk } = smaRisk(path.prices);
      const last = path.prices.length - 1;
      const r = parse('crypto_sma_20w', 'eth-usd_price_with_risk.html');
      expect(r.sma_composite).toMatchObject({
        page_value: fixed(risk[last]!, 2),
        score: fixed(fixed(risk[last]!, 2) * 100, 2),
        band: tenthBand(risk[last]!).name,
        as_of: `${isoOf(ctx.day)}T23:55:00Z`,
      });
    });

    it('phase page: quoted label, completion, +3 sigma target, fair value from the trace at the last bar', () => {
      const weekly = weeklyMeans(ctx.path(asset('BTC')));
      const m = phaseModel(weekly.values, false);
      const n = weekly.values.length;
      const r = parse('crypto_phase', 'BTC_Polynomial_Phase_Detector.html');
      expect(r.phase).toEqual({
        label: cryptoPhaseLabel(m.z),
        completion_pct: fixed(m.completion, 1),
        fair_value: sig8(m.at(n - 1).fair),
        max_euphoria_target: fixed(m.at(n - 1).band(3), 2),
        as_of: phaseBar(weekly.days[n - 1]!),
        as_of_basis: 'trace_end',
        model: 'polynomial_phase_crypto@1',
        source_page: 'BTC_Polynomial_Phase_Detector.html',
      });
    });
  });

  describe('DCA pages', () => {
    const expected = (s: string, degree: number, window: number) => {
      const path = ctx.path(asset(s));
      const reg = dcaRegression(path.days, path.prices, degree, window);
      const last = path.prices.length - 1;
      return { path, reg, last, band: tenthBand(reg.risk[last]!).name };
    };

    it('variant B (BTC): printed premium, regression lines at the last price date', () => {
      const { path, reg, last, band } = expected('BTC', 2, 730);
      const r = parse('dca_regression', 'BTC_lin_reg_price_with_risk.html');
      expect(r.dca).toMatchObject({
        band,
        risk: Number(
          band
            .split('-')
            .map(Number)
            .reduce((a, b) => (a + b) / 2)
            .toFixed(3),
        ),
        price: sig8(path.prices[last]!),
        fair_value: sig8(reg.fair[last]!),
        floor: sig8(reg.floor[last]!),
        ceiling: sig8(reg.ceiling[last]!),
        premium_pct: fixed((path.prices[last]! / reg.fair[last]! - 1) * 100, 2),
        premium_source: 'printed',
        reading_date: isoOf(path.days[last]!),
        as_of_basis: 'trace_end',
      });
    });

    it('variant A (MSTR): no premium printed, so it is derived from price and fair value', () => {
      const { path, reg, last, band } = expected('MSTR', 2, 730);
      const r = parse('dca_regression', 'MSTR_lin_reg_price_with_risk.html');
      expect(r.dca).toMatchObject({
        band,
        premium_source: 'derived',
        premium_pct: fixed((sig8(path.prices[last]!) / sig8(reg.fair[last]!) - 1) * 100, 2),
        floor: sig8(reg.floor[last]!),
      });
    });

    it('equity variant (spy_, lower case): degree-1 fit and its own line names', () => {
      const { path, reg, last, band } = expected('SPY', 1, 504);
      const r = parse('dca_regression', 'spy_lin_reg_price_with_risk.html');
      expect(r.dca).toMatchObject({
        band,
        fair_value: sig8(reg.fair[last]!),
        ceiling: sig8(reg.ceiling[last]!),
        premium_source: 'printed',
        reading_date: isoOf(path.days[last]!),
      });
    });
  });

  describe('equity pages', () => {
    it('TWAP page: 2020 baseline, GRAVITY RISK n/100, level from the Gravity Level trace, trace_end date', () => {
      const path = pathFrom(ctx.path(asset('NVDA')), EQUITY_EPOCH);
      const g = twapGravity(path.prices);
      const last = path.prices.length - 1;
      const r = parse('equity_twap', 'NVDA_Equities_TWAP.html');
      expect(r.gravity).toMatchObject({
        score: fixed(g.gravity[last]!, 1),
        risk_level: levelOfScore(g.gravity[last]!),
        as_of: isoOf(path.days[last]!),
        as_of_basis: 'trace_end',
        model: 'twap_gravity_equity@1',
      });
      expect(r.twap).toMatchObject({ premium_pct: fixed(g.premium[last]! * 100, 2) });
      expect(r.price!.value).toBe(sig8(path.prices[last]!));
    });

    it('composite page (plain number arrays): the last value of the composite trace, x100', () => {
      const weekly = weeklyMeans(ctx.path(asset('NVDA')));
      const c = smaComposite(weekly.values).composite;
      const last = c.length - 1;
      const r = parse('equity_sma_composite', 'NVDA_Composite_SMA_Risk.html');
      expect(r.sma_composite).toMatchObject({
        page_value: sig8(c[last]!),
        score: fixed(sig8(c[last]!) * 100, 2),
        band: tenthBand(c[last]!).name,
        as_of: isoOf(weekly.days[last]!),
      });
    });

    it('valuation page: inline-styled cards and the +3 sigma edge from the zone customdata', () => {
      const weekly = weeklyMeans(pathFrom(ctx.path(asset('SPY')), EQUITY_EPOCH));
      const m = phaseModel(weekly.values, true);
      const n = weekly.values.length;
      const r = parse('equity_valuation', 'SPY_Equities_Valuation.html');
      expect(r.phase).toMatchObject({
        label: zoneOf(m.z),
        completion_pct: fixed(m.completion, 1),
        fair_value: fixed(m.at(n - 1).fair, 2),
        max_euphoria_target: sig8(m.at(n - 1).band(3)),
        as_of: isoOf(weekly.days[n - 1]!),
        model: 'polynomial_phase_equity@1',
      });
    });
  });

  describe('market pages', () => {
    it('fear & greed: card value, 30-day SMA, label from the gauge band table, dated by the base trend', () => {
      const f = fngSeries(ctx.path(asset('BTC')), ctx.seed, -Infinity);
      const last = f.index.length - 1;
      const r = parse('crypto_fear_greed', 'BTC_Unified_FNG_Matrix.html');
      expect(r.fear_greed).toMatchObject({
        value: f.index[last],
        sma_30: Math.round(rollingMean(f.index, 30)[last]!),
        label: fngStep(f.index[last]!).label.toLowerCase(),
        label_source: 'site_band_table',
        provider: 'alternative.me',
        as_of: isoOf(f.days[last]!),
        as_of_basis: 'trace_end',
        scope: 'market',
      });
    });

    it('peak/valley: printed score and zone, page stamp', () => {
      const r = parse('crypto_peak_valley', 'crypto_risk_normalized.html');
      expect(r.peak_valley!.zone).toBe(`${pvZone(r.peak_valley!.score!)} Zone`);
      expect(r.peak_valley).toMatchObject({ as_of: `${isoOf(ctx.day)}T23:53:00Z`, series: 'leading_btc_eth' });
    });

    it("sector feed and widget strips carry the same day's sector readings", () => {
      const feed = parse('sector_feed', 'sector_feed.json');
      expect(Object.keys(feed.sectors!)).toEqual(FEED_UNIVERSES);
      const ai = sectorReading('ai_infrastructure', ctx.day, ctx.seed, markup);
      expect(feed.sectors!.ai_infrastructure).toMatchObject({
        fear_greed: {
          value: ai.fear_greed.value,
          sma_30: ai.fear_greed.sma_30,
          label: ai.fear_greed.label,
          as_of_basis: 'feed_generated_at',
        },
        macro_risk: { score: ai.macro_risk.score, status: ai.macro_risk.status },
      });
      const widget = parse('sector_widget', 'widget_markets_indicators.html');
      const us = sectorReading('us_stock_market', ctx.day, ctx.seed, markup);
      expect(widget.sectors!.us_stock_market).toMatchObject({
        fear_greed: {
          value: us.fear_greed.value,
          sma_30: Math.round(us.fear_greed.sma_30),
          label: us.fear_greed.label,
          as_of_basis: 'page_stamp',
        },
        peak_valley: { score: us.peak_valley.score, zone: us.peak_valley.zone },
        macro_risk: { score: Math.round(us.macro_risk.score), status: us.macro_risk.status },
      });
    });

    it.each([
      ['fear_greed', 'value', -40, 'fear_greed.value'],
      ['peak_valley', 'score', 150, 'peak_valley.score'],
      ['macro_risk', 'score', 100.5, 'macro_risk.score'],
      ['fear_greed', 'sma_30', 101, 'fear_greed.sma_30'],
    ])('sector feed: a %s %s of %s, off its 0-100 scale, is refused naming the file and the field', (group, key, value, field) => {
      const feed = JSON.parse(readFileSync(join(dir, 'sector_feed.json'), 'utf8')) as {
        universes: Record<string, Record<string, Record<string, unknown>>>;
      };
      feed.universes.ai_infrastructure![group]![key] = value;
      expect(() => parseAs('sector_feed', Buffer.from(JSON.stringify(feed)), 'sector_feed.json', false)).toThrow(
        new RegExp(`^sector_feed\\.json: ${field.replace('.', '\\.')}: .*(100|0)`),
      );
    });

    it('ranking: strict-JSON records, ranks with gaps, tickers without suffix', () => {
      const r = parse('market_cap_ranking', 'Crypto_Story_Galaxy.html');
      const expected = ranking(
        CATALOG.filter((a) => a.asset_class === 'CRYPTO'),
        1,
        ctx.seed,
      );
      expect(r.ranking).toEqual(expected.map((e) => ({ symbol: e.asset.symbol, rank: e.rank })));
      expect(r.ranking!.slice(0, 3).map((x) => x.symbol)).toEqual(['BTC', 'ETH', 'BNB']);
    });
  });
});
