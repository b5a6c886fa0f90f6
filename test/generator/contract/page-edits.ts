/**
 * Edits of our fixture pages one number at a time, for the tests that hold every printed and plotted number to its
 * scale or bounds (scales.test.ts, bounds.test.ts): each returns the page's HTML with one thing changed.
 */
import { CATALOG } from '../../helpers.js';
import { pageFiles } from '../../../fixtures/synth/site.js';
import type { PageKind } from '../../../generator/site/registry.js';

/** The file name of an asset's page of a kind, as the synthesiser writes it. */
export const fileOf = (symbol: string, kind: PageKind): string => pageFiles(CATALOG.find((a) => a.symbol === symbol)!)[kind]!;

/** A card's value replaced: the value element right after the label's. */
export const card = (label: string, value: string) => (h: string) =>
  h.replace(new RegExp(`(>${label.replace(/[()+]/g, '\\$&')}</(p|div)>\\s*<(p|div)[^>]*>)[^<]*`), (_, head: string) => head + value);

/** Every trace name matching `from` renamed to `to`. */
export const rename = (from: RegExp, to: string) => (h: string) => h.replace(new RegExp(`"name":"${from.source}"`, 'g'), `"name":"${to}"`);

/** Column `col` of every typed customdata row of the traces named like `name`, set to `value`. */
export const customdata = (name: RegExp, col: number, value: number) => (h: string) => {
  let out = h;
  for (const m of [...h.matchAll(new RegExp(`"name":"${name.source}"`, 'g'))].reverse()) {
    const head = '"customdata":{"dtype":"f8","bdata":"';
    const start = out.lastIndexOf(head, m.index);
    const end = out.indexOf('"', start + head.length);
    const shape = /"shape":"(\d+), (\d+)"/.exec(out.slice(end, end + 40));
    const cols = shape ? Number(shape[2]) : 1;
    const bytes = Buffer.from(out.slice(start + head.length, end).replace(/\\u002f/g, '/'), 'base64');
    const values = new Float64Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
    for (let i = col; i < values.length; i += cols) values[i] = value;
    out = out.slice(0, start + head.length) + Buffer.from(values.buffer).toString('base64').replace(/\//g, '\\u002f') + out.slice(end);
  }
  return out;
};
