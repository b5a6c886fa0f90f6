/**
 * The path rule, stated once: a path a command is given must be the kind its option takes, or the command is bad
 * usage (decision 27's exit 2), refused before anything runs as `<option> <path>: no such folder` / `not a folder`,
 * `no such file` / `not a file`, and for a new file the folder it goes in. The command line applies it as each line
 * is parsed (`existingPath`, commands/options.ts); `build` applies it to what it is called with (build-options.ts),
 * since it is also called without the command line.
 */
import { statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/**
 * What a path option takes: an existing `folder` or `file`, or a `new file` that the command writes (it may exist;
 * the folder it goes in must).
 */
export type PathKind = 'folder' | 'file' | 'new file';

/** Whether `path` is a folder, a file, or nothing (a missing component or one that is a file, ENOTDIR, counts as nothing). */
function pathIs(path: string): 'folder' | 'file' | null {
  try {
    return statSync(path).isDirectory() ? 'folder' : 'file';
  } catch {
    return null;
  }
}

/**
 * Why `path` is not the kind `option` takes, as `<option> <path>: <why>`; null when it is. `hint` ends the message
 * (what to do instead) when the path is not there at all.
 */
export function pathProblem(option: string, path: string, kind: PathKind, hint?: string): string | null {
  const is = pathIs(path);
  let why: string | null = null;
  if (kind === 'folder' && is !== 'folder') why = is ? 'not a folder' : 'no such folder';
  else if (kind === 'file' && is !== 'file') why = is ? 'not a file' : 'no such file';
  else if (kind === 'new file' && is === 'folder') why = 'not a file';
  else if (kind === 'new file' && !is && pathIs(dirname(resolve(path))) !== 'folder')
    why = `no such folder ${dirname(resolve(path))} to write it in`;
  return why && `${option} ${path}: ${why}${hint && !is ? ` (${hint})` : ''}`;
}
