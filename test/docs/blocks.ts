/** The fenced code blocks of a document in docs/, as an operator copies them (the recipes' tests run them). */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { ROOT } from '../helpers.js';

/** The one block of `lang` in `docs/<doc>` that contains `marker`, unindented when it sits in a list item. */
export function block(doc: string, lang: string, marker: string): string {
  const text = readFileSync(join(ROOT, 'docs', doc), 'utf8');
  const found = [...text.matchAll(new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g'))]
    .map((m) => m[1]!)
    .filter((b) => b.includes(marker));
  expect(found, `one ${lang} block with ${marker} in docs/${doc}`).toHaveLength(1);
  return found[0]!.replace(/^ {2}/gm, '');
}

/** The one code span of `docs/<doc>`'s prose that starts with `start` (a command quoted in a sentence), lines joined. */
export function inline(doc: string, start: string): string {
  const prose = readFileSync(join(ROOT, 'docs', doc), 'utf8')
    .replace(/```[\s\S]*?```/g, '')
    .replace(/\s*\n\s*/g, ' ');
  const found = prose.split('`').filter((span, i) => i % 2 === 1 && span.startsWith(start));
  expect(found, `one \`${start}…\` in docs/${doc}`).toHaveLength(1);
  return found[0]!;
}
