/** The HTML around the charts: cards and stamps found by what they say, whatever holds them; bounded cost. */
import { describe, expect, it } from 'vitest';
import { loadChrome, nestingDepth } from '../../../generator/site/html.js';

const page = (body: string) =>
  loadChrome(`<html><head><title>Bitcoin (BTC) Risk Score</title></head><body>${body}</body></html>`, [], 'X.html');

describe('stamps by their label', () => {
  it.each([
    ['<p class="metric-sub">UPDATED: 2026-10-10 23:57 UTC</p>', 'UPDATED'],
    ['<div class="metric-subtext">\n  MARKET PULSE: ONLINE<br>\n  LAST UPDATE: 2026-10-10 23:57 UTC\n</div>', 'LAST UPDATE'],
    ['<p style="x">LAST UPDATED: 2026-10-10 23:57 UTC | NOT FINANCIAL ADVICE</p>', 'LAST UPDATED'],
    ['<span><b>LAST UPDATE:</b> 2026-10-10 23:57 UTC</span>', 'LAST UPDATE'],
  ] as const)('%s', (body, label) => {
    expect(page(body).stamp(label)).toBe('2026-10-10 23:57 UTC');
  });
  it('LAST UPDATED is not taken for UPDATED, and a stamp inside a script is not visible text', () => {
    const p = page('<p>LAST UPDATED: 2026-10-10 23:58 UTC</p><script>var s = "UPDATED: 2031-01-01 00:00 UTC";</script>');
    expect(p.stamp('UPDATED')).toBeUndefined();
    expect(p.stamp('LAST UPDATED')).toBe('2026-10-10 23:58 UTC');
  });
  it('a stamp printed twice with different values is an error naming both', () => {
    expect(() => page('<p>UPDATED: 2026-10-10 23:57 UTC</p><div>UPDATED: 2026-10-11 00:05 UTC</div>').stamp('UPDATED')).toThrow(
      'X.html: stamp "UPDATED": printed twice with different values: "2026-10-10 23:57 UTC" and "2026-10-11 00:05 UTC"',
    );
  });
});

describe('cards by their label', () => {
  it('any element holding the label, value in the next element; the same value twice is fine', () => {
    const p = page("<div><p class='a'>Market Premium</p><p>+1.50%</p></div><section><span>Market Premium</span><b>+1.50%</b></section>");
    expect(p.requireCard('Market Premium').value).toBe('+1.50%');
  });
  it('two different values is an error naming both; an absent card names the label', () => {
    const p = page('<div><p>Market Premium</p><p>+1.50%</p></div><div><p>Market Premium</p><p>+2.00%</p></div>');
    expect(() => p.card('Market Premium')).toThrow(
      'X.html: card "Market Premium": printed twice with different values: "+1.50%" and "+2.00%"',
    );
    expect(() => p.requireCard('Lifetime TWAP Base')).toThrow('X.html: card "Lifetime TWAP Base": absent from the page');
  });
});

describe('identity', () => {
  it('title, breadcrumb position 3 and ticker headers', () => {
    const html =
      '<html><head><title>Ethereum (ETH) Risk Score</title><script type="application/ld+json">{"@type":"BreadcrumbList","itemListElement":[{"position":3,"name":"Ethereum","item":"https://x/reports/ETH"}]}</script></head>' +
      '<body><h1 class="metric-title">ETH TWAP Risk Analysis <span>Spot: $1</span></h1><p>ETH Current Price</p><p>$1</p></body></html>';
    expect(loadChrome(html, [], 'X.html').identity()).toEqual({ symbols: ['ETH'], names: ['Ethereum'] });
  });
});

describe('bounded cost', () => {
  it('nesting depth is measured in one pass, ignoring void elements, comments and script bodies', () => {
    expect(nestingDepth('<div><p>a<br>b</p><!-- <div><div> --><script>"<div><div><div>"</script></div>')).toBe(2);
  });
  it('a page nested deeper than the bound is refused with its depth', () => {
    const n = 200_000;
    expect(() => page(`${'<div>'.repeat(n)}${'</div>'.repeat(n)}`)).toThrow(
      `X.html: (page): elements nested ${n + 2} deep, more than the 256 a page may have`,
    );
  });
});
