/** The diff for people (grouped, largest moves first, one line per change) and as data. */
import { styleText } from 'node:util';
import { GROUPS, type Change, type DiffResult } from './compare.js';

const show = (v: unknown): string => {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
};

const signed = (d: number) => `${d > 0 ? '+' : ''}${Number(d.toFixed(6))}`;

function summaryLine(r: DiffResult): string {
  if (r.changes.length === 0) return `no change (${r.files.unchanged} files identical)`;
  const count = (g: string) => r.changes.filter((c) => c.group === g).length;
  const alarms = r.changes.filter((c) => c.level === 'alarm').length;
  const contract = r.changes.filter((c) => c.level === 'contract').length;
  const parts = GROUPS.map((g) => [g, count(g)] as const)
    .filter(([, n]) => n)
    .map(([g, n]) => `${n} ${g}`);
  return (
    `${r.changes.length} changes (${parts.join(', ')}) in ${r.files.changed + r.files.added + r.files.removed} files` +
    (contract ? ` · CONTRACT CHANGED (${contract})` : ' · contract unchanged') +
    (alarms ? ` · ${alarms} PUBLISHED HISTORY ROW(S) CHANGED OR VANISHED` : ' · no published row changed')
  );
}

/** How big a move is, across fields of different units: relative to where it started. */
const size = (c: Change) => (c.delta === undefined ? 0 : Math.abs(c.delta) / Math.max(Math.abs(Number(c.old)), 1e-9));

/** Within a group: alarms first, then the largest relative moves, then the rest, by subject and field. */
function order(a: Change, b: Change): number {
  const rank = (c: Change) => (c.level === 'alarm' ? 0 : c.level === 'contract' ? 1 : 2);
  return rank(a) - rank(b) || size(b) - size(a) || a.subject.localeCompare(b.subject) || a.field.localeCompare(b.field);
}

export function human(r: DiffResult, colour: boolean): string {
  const paint = (style: Parameters<typeof styleText>[0], text: string) => (colour ? styleText(style, text) : text);
  const lines = [paint('bold', summaryLine(r))];
  if (r.events.length) {
    lines.push('', paint('bold', `events (${r.events.length}): what GET /v1/changes lists for this refresh`));
    for (const e of r.events) lines.push(`  ${e.symbol ?? e.universe}  ${e.field}  ${show(e.from)} → ${show(e.to)}`);
  }
  for (const g of GROUPS) {
    const list = r.changes.filter((c) => c.group === g).sort(order);
    if (!list.length) continue;
    lines.push('', paint('bold', `${g} (${list.length})`));
    for (const c of list) {
      const move = c.delta !== undefined && c.group !== 'history' ? `  (${signed(c.delta)})` : '';
      const text =
        c.field.startsWith('row ') && c.level === 'alarm'
          ? `  ${c.subject}  ${c.field}  ${c.new === null ? 'VANISHED' : 'CHANGED'}: ${show(c.old)} → ${show(c.new)}`
          : `  ${c.subject}  ${c.field}  ${show(c.old)} → ${show(c.new)}${move}`;
      lines.push(c.level === 'alarm' ? paint(['red', 'bold'], text) : c.level === 'contract' ? paint('yellow', text) : text);
    }
  }
  return lines.join('\n') + '\n';
}

export function asJson(r: DiffResult, status: number): string {
  const groups = Object.fromEntries(GROUPS.map((g) => [g, r.changes.filter((c) => c.group === g).sort(order)]));
  return JSON.stringify({ summary: summaryLine(r), status, files: r.files, groups, events: r.events }, null, 2) + '\n';
}
