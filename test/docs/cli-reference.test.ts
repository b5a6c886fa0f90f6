/**
 * docs/cli.md's table against the command line itself: every option a command's `--help` lists is named in that
 * command's row, and every command the CLI has has a row. An operator reads the table, not the source; an option added to
 * cli.ts without its row fails here.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, ROOT } from '../helpers.js';

const help = (...command: string[]) => execFileSync(process.execPath, [BIN, ...command, '--help'], { encoding: 'utf8' });

/** The command names a help lists under `Commands:` (help itself left out). */
const commandsOf = (text: string) =>
  [...text.slice(text.indexOf('Commands:')).matchAll(/^ {2}([a-z-]+)/gm)].map((m) => m[1]!).filter((c) => c !== 'help');

/** The long options a help lists (`--help` and `--version` left out). */
const optionsOf = (text: string) =>
  [...text.matchAll(/^ {2}(?:-\w, )?(--[a-z-]+)/gm)].map((m) => m[1]!).filter((o) => o !== '--help' && o !== '--version');

/** The rows of docs/cli.md's command table, each from the command as an operator types it (an option may be named in its text). */
const rows = readFileSync(join(ROOT, 'docs', 'cli.md'), 'utf8')
  .split('\n')
  .filter((l) => /^\| `[a-z]/.test(l))
  .map((l) => l.slice(3));

/** The row of `path` (`keys add`, `webhooks disable`): one starting with it, or naming it among `a\|b` alternatives. */
function rowOf(path: string[]): string | undefined {
  const [top, sub] = path;
  return rows.find((r) => {
    const [first, second = ''] = r.split(' ');
    if (first !== top) return false;
    return sub === undefined || second.split('\\|').includes(sub) || r.includes(`\\|${sub} `);
  });
}

const commands = commandsOf(help()).flatMap((c) => {
  const sub = commandsOf(help(c));
  return sub.length ? sub.map((s) => [c, s]) : [[c]];
});

describe('docs/cli.md names what the CLI takes', () => {
  it('finds the commands', () => {
    expect(commands.map((c) => c.join(' '))).toEqual(expect.arrayContaining(['build', 'serve', 'keys add', 'keys set', 'webhooks enable']));
  });

  it.each(commands.map((c) => [c.join(' '), c]))('%s: a row with every option its --help lists', (_name, path) => {
    const row = rowOf(path as string[]);
    expect(row, `no row of docs/cli.md for ${path.join(' ')}`).toBeDefined();
    const missing = optionsOf(help(...(path as string[]))).filter((o) => !new RegExp(`${o}(?![a-z-])`).test(row!));
    expect(missing, `docs/cli.md's row for ${path.join(' ')} leaves out`).toEqual([]);
  });
});
