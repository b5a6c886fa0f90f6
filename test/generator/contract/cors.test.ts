/** The origins a deployment lets browsers call from (decision 105), as `serve --cors-origin` and the edge read them. */
import { describe, expect, it } from 'vitest';
import { allowedOrigin, originList } from '../../../generator/contract/cors.js';

describe('allowedOrigin', () => {
  it('keeps an origin as a browser sends it: scheme and host lower-case, no default port, a host in punycode', () => {
    const cases: [string, string][] = [
      ['https://dash.example.com', 'https://dash.example.com'],
      ['HTTPS://Dash.Example.COM:443', 'https://dash.example.com'],
      ['http://localhost:5173', 'http://localhost:5173'],
      ['http://127.0.0.1:80', 'http://127.0.0.1'],
      ['https://[::1]:8443', 'https://[::1]:8443'],
      ['https://münchen.example', 'https://xn--mnchen-3ya.example'],
      ['*', '*'],
    ];
    for (const [given, kept] of cases) expect(allowedOrigin(given), given).toBe(kept);
  });

  it('refuses anything else: a path (even /), a query, a fragment, a user, another scheme, no host, a bad port, null', () => {
    for (const v of [
      'https://dash.example.com/',
      'https://dash.example.com/app',
      'https://dash.example.com?x=1',
      'https://dash.example.com#top',
      'https://user@dash.example.com',
      'ftp://dash.example.com',
      'chrome-extension://abcdef',
      'dash.example.com',
      'https://',
      'http://:80',
      'https://dash.example.com:99999',
      'https://dash example.com',
      'null',
      '',
      '**',
    ])
      expect(allowedOrigin(v), v).toBeNull();
  });
});

describe('originList', () => {
  it('splits on commas, spaces or both, and an empty list is none', () => {
    expect(originList('https://a.example, https://b.example  http://c.example:8080,*')).toEqual([
      'https://a.example',
      'https://b.example',
      'http://c.example:8080',
      '*',
    ]);
    expect(originList('')).toEqual([]);
    expect(originList(' , ')).toEqual([]);
    expect(originList(undefined)).toEqual([]);
  });
});
