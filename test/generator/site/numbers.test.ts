import { describe, expect, it } from 'vitest';
import { notPrinted, parsePrinted, round2, sig8 } from '../../../generator/site/numbers.js';
import { verdict } from '../../../generator/site/models.js';
import { gravityBand } from '../../../generator/api/summary.js';
import { parseDate, parseStamp } from '../../../generator/site/stamps.js';
import { PageError } from '../../../generator/site/errors.js';

describe('parsePrinted', () => {
  it.each([
    ['$82,907', 82907],
    ['$0.9387', 0.9387],
    ['$82,907.05', 82907.05],
    ['$82,905.3906', 82905.3906],
    ['+177.81%', 177.81],
    ['-48.25%', -48.25],
    ['11.4/100', 11.4],
    ['61', 61],
    ['0.55', 0.55],
    ['-$0.0539', -0.0539],
  ])('reads %s as %d', (text, value) => expect(parsePrinted(text, 'p.html', 'card')).toBe(value));

  it.each(['N/A', '—', '-', '', '  '])('reads the unprinted value %j as null, never 0', (text) => {
    expect(parsePrinted(text, 'p.html', 'card')).toBeNull();
  });

  it('names the file, the field and what it found when a number does not parse', () => {
    expect(() => parsePrinted('$16,7x0', 'BTC_x.html', 'card "Lifetime TWAP Base"')).toThrow(PageError);
    expect(() => parsePrinted('$16,7x0', 'BTC_x.html', 'card "Lifetime TWAP Base"')).toThrow(
      'BTC_x.html: card "Lifetime TWAP Base": expected a printed number, found "$16,7x0"',
    );
  });

  it('fails on a card that is absent', () => {
    expect(() => parsePrinted(undefined, 'a.html', 'card "X"')).toThrow('a.html: card "X": no such card on the page');
  });

  it('keeps 8 significant digits and rounds to 2 decimals', () => {
    expect(sig8(82905.390625123)).toBe(82905.391);
    expect(sig8(0.000012345678912)).toBe(0.000012345679);
    expect(round2(55.005)).toBe(55.01);
    expect(round2(-1.005)).toBe(-1.01);
  });
});

describe('stamps', () => {
  it('reads the three printed forms as ISO 8601 UTC to the minute', () => {
    expect(parseStamp('LAST UPDATED: 2026-10-10 23:58 UTC | NOT FINANCIAL ADVICE', 'f', 's')).toBe('2026-10-10T23:58:00Z');
    expect(parseStamp('UPDATED: 2026-10-11 00:06 UTC', 'f', 's')).toBe('2026-10-11T00:06:00Z');
    expect(parseStamp('UPDATED: October 11, 2026 - 00:09 UTC', 'f', 's')).toBe('2026-10-11T00:09:00Z');
  });
  it('rejects a malformed or impossible stamp, naming the file', () => {
    expect(() => parseStamp('UPDATED: 2026-13-40 25:00 UTC', 'x.html', 'stamp')).toThrow(/x\.html: stamp: not a real date/);
    expect(() => parseStamp('UPDATED: yesterday', 'x.html', 'stamp')).toThrow(/x\.html: stamp: expected a stamp/);
    expect(() => parseStamp(undefined, 'x.html', 'stamp')).toThrow('x.html: stamp: no stamp on the page');
  });
  it('reads plain dates', () => {
    expect(parseDate('2026-10-09', 'f', 'd')).toBe('2026-10-09');
    expect(() => parseDate('2026-02-30', 'f', 'd')).toThrow(/not a real date/);
  });
});

describe("printed numbers follow the page's own format", () => {
  it.each(['$8,2,900', '$82,90', '1234,567', '+,5%'])('%s is an error, not a number', (t) => {
    expect(() => parsePrinted(t, 'X.html', 'card "C"')).toThrow(`X.html: card "C": expected a printed number, found "${t}"`);
  });
  it.each([
    ['$82,907.05', 82907.05],
    ['-48.25%', -48.25],
    ['$0.9387', 0.9387],
    ['$1,234,567', 1234567],
    ['11.4/100', 11.4],
  ])('%s reads %d', (t, n) => {
    expect(parsePrinted(t, 'X.html', 'card "C"')).toBe(n);
  });
});

describe('one "not printed" rule for every card', () => {
  it.each(['N/A', 'n/a', '—', '–', '-', '--', 'NaN', '', '  N/A  '])(
    '"%s" is no value, for parsePrinted and for the TWAP risk card alike',
    (t) => {
      expect(notPrinted(t)).toBe(true);
      expect(parsePrinted(t, 'X.html', 'card "C"')).toBeNull();
    },
  );
  it('a value is a value', () => {
    expect(notPrinted('Level 7')).toBe(false);
    expect(notPrinted('0')).toBe(false);
  });
});

describe('Gravity bands, defined once', () => {
  it('the edges 25, 50 and 75 open the next band, for the verdicts and the summaries alike', () => {
    const scores = [0, 24.99, 25, 49.99, 50, 74.99, 75, 100];
    expect(scores.map(gravityBand)).toEqual([
      'accumulation',
      'accumulation',
      'mid_cycle',
      'mid_cycle',
      'late_cycle',
      'late_cycle',
      'cycle_top',
      'cycle_top',
    ]);
    expect(scores.map((s) => verdict(s, 'CRYPTO'))).toEqual(scores.map((s) => verdict(GRAVITY_EDGE_SCORE[gravityBand(s)], 'CRYPTO')));
  });
});

/** A score inside each band, to compare verdicts band by band. */
const GRAVITY_EDGE_SCORE = { accumulation: 10, mid_cycle: 30, late_cycle: 60, cycle_top: 90 } as const;
