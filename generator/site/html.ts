import { load, type CheerioAPI } from 'cheerio/slim';
import type { PlotlyFigure } from './plotly.js';
import { PageError } from './errors.js';

/**
 * The page's HTML without its Plotly trace arrays: the cards, stamps and SEO blocks, a few tens of KB,
 * which is all cheerio ever sees.
 */
export function loadChrome(html: string, figures: PlotlyFigure[] = []): CheerioAPI {
  let small = '';
  let at = 0;
  for (const f of figures) {
    small += html.slice(at, f.start) + '[]';
    at = f.end;
  }
  return load(small + html.slice(at));
}

const squash = (s: string) => s.replace(/\s+/g, ' ').trim();

export interface Card {
  label: string;
  value: string;
  /** Inline style of the value element (the Gravity card's colour is its level). */
  style: string;
}

/**
 * Label/value cards: each leaf element matching `labelSelector` whose text matches `label`, paired with its
 * next element sibling. One rule for every card markup of the site (p.card-lbl + p.card-val,
 * p.card-title + p.card-value, div.card-lbl + div.card-val, unclassed inline-styled divs).
 */
export function findCard($: CheerioAPI, labelSelector: string, label: string | RegExp): Card | undefined {
  for (const el of $(labelSelector).toArray()) {
    const node = $(el);
    if (node.children().length > 0) continue;
    const text = squash(node.text());
    if (typeof label === 'string' ? text !== label : !label.test(text)) continue;
    const value = node.next();
    if (value.length === 0) continue;
    return { label: text, value: squash(value.text()), style: value.attr('style') ?? '' };
  }
  return undefined;
}

export function requireCard($: CheerioAPI, labelSelector: string, label: string | RegExp, file: string): Card {
  const card = findCard($, labelSelector, label);
  if (!card) throw new PageError(file, `card "${String(label).replace(/^\/|\/$/g, '')}"`, 'absent from the page');
  return card;
}

/** Text of the first element matching `selector` whose text matches `pattern`. */
export function findText($: CheerioAPI, selector: string, pattern: RegExp): string | undefined {
  for (const el of $(selector).toArray()) {
    const text = squash($(el).text());
    if (pattern.test(text)) return text;
  }
  return undefined;
}

/** Trimmed text of the first element matching `selector`, or undefined. */
export function textOf($: CheerioAPI, selector: string): string | undefined {
  const node = $(selector).first();
  return node.length ? squash(node.text()) : undefined;
}

export const LEVEL_PALETTE = [
  'rgb(221, 160, 221)', 'rgb(30, 144, 255)', 'rgb(0, 255, 255)', 'rgb(189, 252, 201)', 'rgb(0, 128, 128)',
  'rgb(0, 255, 0)', 'rgb(255, 255, 0)', 'rgb(255, 165, 0)', 'rgb(255, 0, 0)', 'rgb(220, 20, 60)',
] as const;

/** Level 1..10 of a `color: rgb(...)` inline style, by the site's level palette; undefined when none matches. */
export function levelOfStyle(style: string): number | undefined {
  const m = /(?:^|;)\s*color\s*:\s*(rgb\(\s*\d+\s*,\s*\d+\s*,\s*\d+\s*\))/i.exec(style);
  if (!m) return undefined;
  const rgb = m[1]!.replace(/\s+/g, '').replace(/,/g, ', ');
  const i = LEVEL_PALETTE.indexOf(rgb as (typeof LEVEL_PALETTE)[number]);
  return i >= 0 ? i + 1 : undefined;
}
