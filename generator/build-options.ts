/**
 * What `build` is given, checked before anything runs: the paths by the one path rule (path-rule.ts), whether there
 * is a previous tree to continue, `--now` and `--api-info`. A mistake in the command is exit 2 (usage), never
 * retried (decision 77); what it reads is the input's (exit 1).
 */
import { existsSync, readFileSync } from 'node:fs';
import { BuildError, type BuildOptions } from './build-report.js';
import { EXIT } from './exit.js';
import { ApiInfo } from './openapi/document.js';
import { pathProblem, type PathKind } from './path-rule.js';
import { isUrl } from './previous/previous-tree.js';
import { noPrevious } from './read-inputs.js';

/** The options as the build runs on them: its time, where the previous tree is read from, the document's info. */
interface CheckedOptions {
  at: string;
  previousSource: string;
  apiInfo: ApiInfo | undefined;
}

export function checkOptions(opts: BuildOptions): CheckedOptions {
  const at = builtAt(opts.now);
  const previousSource = opts.previous ?? opts.out;
  // A path that is not the kind its option takes is a mistake in the command, not a passing failure: exit 2, never
  // retried (decision 77), checked before anything runs. A `--previous` URL is no path; a folder holding no tree is
  // "no previous tree" (decision 27: exit 1 unless --init), a path that is no folder at all a typo, even with --init.
  const expect = (option: string, path: string, kind: PathKind) => {
    const problem = pathProblem(option, path, kind);
    if (problem) throw new BuildError(problem, {}, [], EXIT.usage);
  };
  expect('--pages', opts.pages, 'folder');
  if (existsSync(opts.out)) expect('--out', opts.out, 'folder');
  if (opts.previous !== undefined && !isUrl(opts.previous)) expect('--previous', opts.previous, 'folder');
  if (opts.catalog !== undefined) expect('--catalog', opts.catalog, 'file');
  if (!opts.init && !isUrl(previousSource) && !existsSync(previousSource)) throw noPrevious(previousSource);
  const apiInfo = opts.apiInfo === undefined ? undefined : readApiInfo(opts.apiInfo);
  return { at, previousSource, apiInfo };
}

/** `--api-info`: a file that does not exist is the command's mistake (exit 2), one that is not the shape the input's (1). */
function readApiInfo(file: string): ApiInfo {
  if (!existsSync(file)) throw new BuildError(`--api-info ${file}: no such file`, {}, [], EXIT.usage);
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new BuildError(`--api-info ${file}: not JSON (${(e as Error).message})`, {}, []);
  }
  const r = ApiInfo.safeParse(json);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  throw new BuildError(`--api-info ${file}: ${issue.path.join('.') || '(document)'}: ${issue.message}`, {}, []);
}

/** `--now` as an ISO instant to the second, or the clock. */
function builtAt(now?: string): string {
  const t = now ? Date.parse(now) : Date.now();
  if (!Number.isFinite(t)) throw new BuildError(`--now: expected an ISO 8601 time, found "${now}"`, {}, []);
  return new Date(t).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
