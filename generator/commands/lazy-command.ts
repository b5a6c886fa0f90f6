/** How cli.ts declares a command: its work is in its own module (commands/<name>.ts), imported only when it runs. */
import type { Command } from 'commander';
import { EXAMPLES } from './help.js';

type Run = (...args: never[]) => Promise<void>;

/** `name` under `parent`, with its examples after its help; runs what `load` gives (commander's own Command argument left off). */
export const command = (parent: Command, name: string, about: string, load: () => Promise<Run>) =>
  parent
    .command(name)
    .description(about)
    .addHelpText('after', EXAMPLES[name] ?? '')
    .action(async (...args: unknown[]) => ((await load()) as (...a: unknown[]) => Promise<void>)(...args.slice(0, -1)));
