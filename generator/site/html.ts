/**
 * The small HTML around a page's charts: cards, stamps and the page's own naming, found by what they say rather
 * than by one tag path (the site moves a reading from a `<p>` to a `<div>` between page kinds and over time).
 */
import { load, type CheerioAPI } from 'cheerio/slim';
import { pageBytes, type PlotlyFigure } from './plotly.js';
import { PageError, describe } from './errors.js';
import { parsePrinted } from './numbers.js';

/**
 * What any one page may hand the DOM parser. The site's pages nest about 20 deep in a few tens of KB around
 * their charts; cheerio's queries grow with depth times size, so a page beyond these bounds is refused up front
 * rather than allowed to stall the build on a hostile page of deeply nested elements.
 */
const MAX_DEPTH = 256;
const MAX_CHROME_CHARS = 4_000_000;

const VOID = new Set(['area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'param', 'source', 'track', 'wbr']);
const RAW = new Set(['script', 'style']);

/** The deepest element nesting of `html`, in one linear pass over its tags (script and style bodies skipped). */
export function nestingDepth(html: string): number {
  const tag = /<!--[\s\S]*?-->|<(\/?)([a-zA-Z][a-zA-Z0-9-]*)[^>]*>/g;
  let depth = 0;
  let max = 0;
  for (let m = tag.exec(html); m; m = tag.exec(html)) {
    const name = m[2]?.toLowerCase();
    if (!name) continue;
    if (m[1]) {
      if (depth > 0) depth--;
      continue;
    }
    if (VOID.has(name) || m[0].endsWith('/>')) continue;
    if (++depth > max) max = depth;
    if (RAW.has(name)) {
      const end = html.indexOf(`</${name}`, tag.lastIndex);
      if (end < 0) break;
      tag.lastIndex = end;
    }
  }
  return max;
}

const squash = (s: string) => s.replace(/\s+/g, ' ').trim();

interface Card {
  label: string;
  value: string;
  /** Inline style of the value element (the Gravity card's colour is its level). */
  style: string;
}

/** How a page names its own asset: the symbols and names its title, breadcrumb and headers give. */
export interface PageIdentity {
  symbols: string[];
  names: string[];
}

/** Headers that open with the asset's ticker: `BTC Current Price`, `BTC TWAP Risk Analysis`, `NVDA TWAP Gravity Risk Model`, ... */
const TICKER_HEADER =
  /^([A-Z0-9][A-Z0-9.-]{0,19}) (Current Price|TWAP Risk Analysis|Risk Matrix|DCA Risk Analysis|Macro Risk Analysis|3-Sigma Polynomial Phase Detector|Polynomial Phase Detector|TWAP Gravity Risk Model|Polynomial Fair Value & Phase Detector|Composite SMA Squeeze & Derived Risk Metric)$/;
type StampLabel = 'LAST UPDATED' | 'LAST UPDATE' | 'UPDATED';
const STAMP = /\b(LAST UPDATED|LAST UPDATE|UPDATED)\s*:\s*([^|]{6,40}?UTC)/g;

/** The page's HTML without its Plotly trace arrays, parsed once, with its visible text and cards indexed once. */
export interface Chrome {
  $: CheerioAPI;
  file: string;
  /** The card whose label reads exactly `label` (any element, value in the next element); an error if printed twice with different values. */
  card(label: string): Card | undefined;
  requireCard(label: string): Card;
  /** The card's value as a printed number (null where the site prints none); an error names the card. */
  printed(label: string): number | null;
  /** The raw text of the stamp after `label:` (for parseStamp); an error if printed twice with different values. */
  stamp(label: StampLabel): string | undefined;
  /** The first group of `pattern` in the page's visible text; an error if it reads differently in two places. */
  find(pattern: RegExp, field: string): string | undefined;
  /** Trimmed text of the element with this id. */
  byId(id: string): string | undefined;
  identity(): PageIdentity;
}

interface Index {
  text: string;
  cards: Map<string, Card[]>;
  tickers: Set<string>;
  /** The first `<title>`'s text, and each JSON-LD script's, in document order (the page's naming of itself). */
  title: string | undefined;
  jsonLd: string[];
}

type Node = { type: string; name?: string; data?: string; children?: Node[]; next?: Node | null; attribs?: Record<string, string> };
const isElement = (n: Node) => n.type === 'tag';

/** The text of a node's text children (a script's or a title's). */
const ownText = (node: Node) =>
  (node.children ?? [])
    .filter((k) => k.type === 'text')
    .map((k) => k.data)
    .join('');

/**
 * One pass over the DOM: the visible text (no script or style), every leaf-label card, ticker headers, and the
 * title and JSON-LD scripts the page names itself by (two selector queries over the whole page cost as much).
 */
function index($: CheerioAPI): Index {
  const parts: string[] = [];
  const cards = new Map<string, Card[]>();
  const tickers = new Set<string>();
  let title: string | undefined;
  const jsonLd: string[] = [];
  const stack: Node[] = [...(($.root()[0] as unknown as Node).children ?? [])].reverse();
  while (stack.length) {
    const node = stack.pop()!;
    if (node.type === 'text') {
      parts.push(node.data ?? '');
      continue;
    }
    if (node.type === 'script' && node.attribs?.type === 'application/ld+json') jsonLd.push(ownText(node));
    if (!isElement(node)) continue;
    if (node.name === 'title' && title === undefined) title = ownText(node);
    const kids = node.children ?? [];
    const own = squash(
      kids
        .filter((k) => k.type === 'text')
        .map((k) => k.data)
        .join(' '),
    );
    const ticker = TICKER_HEADER.exec(own);
    if (ticker) tickers.add(ticker[1]!);
    if (own && own.length <= 80 && !kids.some(isElement)) {
      let next = node.next;
      while (next && !isElement(next)) next = next.next;
      if (next) {
        const list = cards.get(own) ?? [];
        list.push({ label: own, value: squash($(next as never).text()), style: next.attribs?.style ?? '' });
        cards.set(own, list);
      }
    }
    parts.push(' ');
    for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]!);
  }
  return { text: squash(parts.join('')), cards, tickers, title, jsonLd };
}

function twice(file: string, field: string, values: string[]): PageError {
  return new PageError(file, field, `printed twice with different values: ${describe(values[0])} and ${describe(values[1])}`);
}

/** The page without its figures' traces (byte ranges from readFigures), decoded and parsed once. */
export function loadChrome(page: Uint8Array | string, figures: PlotlyFigure[], file: string): Chrome {
  const bytes = pageBytes(page);
  let small = '';
  let at = 0;
  for (const f of figures) {
    small += bytes.toString('utf8', at, f.start) + '[]';
    at = f.end;
  }
  small += bytes.toString('utf8', at);
  if (small.length > MAX_CHROME_CHARS)
    throw new PageError(
      file,
      '(page)',
      `${small.length} characters of HTML around the charts, more than the ${MAX_CHROME_CHARS} a page may have`,
    );
  const depth = nestingDepth(small);
  if (depth > MAX_DEPTH) throw new PageError(file, '(page)', `elements nested ${depth} deep, more than the ${MAX_DEPTH} a page may have`);
  const $ = load(small);
  let idx: Index | undefined;
  const get = () => (idx ??= index($));
  const card = (label: string) => {
    const list = get().cards.get(label) ?? [];
    const values = [...new Set(list.map((c) => c.value))];
    if (values.length > 1) throw twice(file, `card "${label}"`, values);
    return list[0];
  };
  const requireCard = (label: string) => {
    const c = card(label);
    if (!c) throw new PageError(file, `card "${label}"`, 'absent from the page');
    return c;
  };
  return {
    $,
    file,
    card,
    requireCard,
    printed: (label) => parsePrinted(requireCard(label).value, file, `card "${label}"`),
    stamp(label) {
      const found = [...get().text.matchAll(STAMP)].filter((m) => m[1] === label).map((m) => squash(m[2]!));
      const values = [...new Set(found)];
      if (values.length > 1) throw twice(file, `stamp "${label}"`, values);
      return values[0];
    },
    find(pattern, field) {
      const all = new RegExp(pattern.source, pattern.flags.includes('g') ? pattern.flags : pattern.flags + 'g');
      const values = [...new Set([...get().text.matchAll(all)].map((m) => m[1]!))];
      if (values.length > 1) throw twice(file, field, values);
      return values[0];
    },
    byId(id) {
      const node = $(`[id="${id}"]`);
      if (node.length > 1) {
        const values = [...new Set(node.toArray().map((n) => squash($(n).text())))];
        if (values.length > 1) throw twice(file, `#${id}`, values);
      }
      return node.length ? squash(node.first().text()) : undefined;
    },
    identity: () => identityOf(get()),
  };
}

function identityOf(idx: Index): PageIdentity {
  const symbols = new Set(idx.tickers);
  const names = new Set<string>();
  const title = /^(.+?) \(([A-Za-z0-9.-]{1,20})\)/.exec(squash(idx.title ?? ''));
  if (title) {
    names.add(title[1]!);
    symbols.add(title[2]!);
  }
  for (const text of idx.jsonLd) {
    let doc: { '@type'?: string; itemListElement?: { position?: number; name?: string; item?: string }[] };
    try {
      doc = JSON.parse(text);
    } catch {
      continue;
    }
    const crumb = doc['@type'] === 'BreadcrumbList' ? doc.itemListElement?.find((i) => i.position === 3) : undefined;
    const reports = crumb?.item ? /\/reports\/([A-Za-z0-9.-]{1,20})$/.exec(crumb.item) : null;
    if (reports) {
      symbols.add(reports[1]!);
      if (crumb?.name) names.add(crumb.name);
    }
  }
  return { symbols: [...symbols].sort(), names: [...names].sort() };
}

export const LEVEL_PALETTE = [
  'rgb(221, 160, 221)',
  'rgb(30, 144, 255)',
  'rgb(0, 255, 255)',
  'rgb(189, 252, 201)',
  'rgb(0, 128, 128)',
  'rgb(0, 255, 0)',
  'rgb(255, 255, 0)',
  'rgb(255, 165, 0)',
  'rgb(255, 0, 0)',
  'rgb(220, 20, 60)',
] as const;

/** Level 1..10 of a `color: rgb(...)` inline style, by the site's level palette; undefined when none matches. */
export function levelOfStyle(style: string): number | undefined {
  const m = /(?:^|;)\s*color\s*:\s*(rgb\(\s*\d+\s*,\s*\d+\s*,\s*\d+\s*\))/i.exec(style);
  if (!m) return undefined;
  const rgb = m[1]!.replace(/\s+/g, '').replace(/,/g, ', ');
  const i = LEVEL_PALETTE.indexOf(rgb as (typeof LEVEL_PALETTE)[number]);
  return i >= 0 ? i + 1 : undefined;
}
