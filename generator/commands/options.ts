/** Option values as the commands take them: each parser names the option and what it expects (exit 2 otherwise). */
import { existsSync } from 'node:fs';
import { basename, dirname, join, resolve as resolvePath } from 'node:path';
import { InvalidArgumentError } from 'commander';
import { allowedOrigin, ORIGIN_FORM } from '../contract/cors.js';
import { isCalendarDate, isoInstantMs } from '../contract/time.js';
import { PLANS } from '../contract/plans.js';
import { hashPrefixExpected, isHashPrefix, metaBytes } from '../contract/keys.js';
import { KEY_META_MAX_BYTES } from '../contract/plans.js';
import { TREE } from '../contract/tree.js';
import { liveTree } from '../output/live-tree.js';
import { pathProblem, type PathKind } from '../path-rule.js';

export const positiveInt = (name: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`${name} takes a whole number from 1, not "${v}"`);
  return n;
};

/** An asset symbol, as the tree names it (upper case); never empty, which would mean every asset. */
export const symbol = (name: string) => (v: string) => {
  const s = v.trim().toUpperCase();
  if (!s) throw new InvalidArgumentError(`${name} takes an asset symbol such as BTC, not an empty value`);
  return s;
};

/** A TCP port, 1-65535. */
export const port = (name: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 65_535) throw new InvalidArgumentError(`${name} takes a port from 1 to 65535, not "${v}"`);
  return n;
};

/** A port option that may be given again, each a port from 1 to 65535 (`serve --webhooks-allow-port`). */
export const ports =
  (name: string) =>
  (v: string, previous: number[] = []): number[] => [...previous, port(name)(v)];

/** A calendar date YYYY-MM-DD that exists. */
export const calendarDate = (name: string) => (v: string) => {
  if (!isCalendarDate(v)) throw new InvalidArgumentError(`${name} takes a date YYYY-MM-DD, not "${v}"`);
  return v;
};

/** A calendar month YYYY-MM. */
export const yearMonth = (name: string) => (v: string) => {
  if (!/^\d{4}-(0[1-9]|1[0-2])$/.test(v)) throw new InvalidArgumentError(`${name} takes a month YYYY-MM such as 2026-10, not "${v}"`);
  return v;
};

/** A duration: a number with a unit s, m, h or d (hours when bare), in milliseconds. */
export const duration = (name: string) => (v: string) => {
  const m = /^(\d+(?:\.\d+)?)([smhd]?)$/.exec(v.trim());
  const ms = m ? Number(m[1]) * { s: 1e3, m: 6e4, h: 3.6e6, d: 8.64e7, '': 3.6e6 }[m[2] as 's' | 'm' | 'h' | 'd' | ''] : NaN;
  if (!(ms > 0)) throw new InvalidArgumentError(`${name} takes a duration such as 36h, 90m or 2d, not "${v}"`);
  return ms;
};

/** An ISO 8601 instant. */
export const instant = (name: string) => (v: string) => {
  if (!Number.isFinite(isoInstantMs(v))) {
    throw new InvalidArgumentError(`${name} takes an ISO 8601 time such as 2026-10-14T00:30:00Z, not "${v}"`);
  }
  return v;
};

/** When a key stops working (decision 37): an instant, or a span from when the command runs. */
export type Expiry = { at: number } | { after: number };
const SPAN = /^\+(\d+)([hd])$/;
/** The last instant the key file can name: its times are ISO 8601 with a four-digit year. */
const LAST_INSTANT = Date.UTC(9999, 11, 31, 23, 59, 59);
/** A span's milliseconds; one that would end past the year 9999 is no time the key file can hold (usage, exit 2). */
const spanMs = (name: string, v: string, m: RegExpExecArray) => {
  const ms = Number(m[1]) * (m[2] === 'h' ? 3_600_000 : 86_400_000);
  if (Date.now() + ms > LAST_INSTANT) throw new InvalidArgumentError(`${name} ${v} would end after the year 9999; give a shorter span`);
  return ms;
};

/** `keys revoke --sha256`: the first 8 to 64 hex digits of a key's hash, as `keys list` shows them; lower-cased. */
/**
 * A key's own limit (decision 106): a whole number from 1 to `max`, or `plan` to return to the plan's (kept as the
 * word: commander turns a parser's null into '').
 */
export const keyLimit =
  (name: string, max: number) =>
  (v: string): number | 'plan' => {
    if (v === 'plan') return 'plan';
    const n = /^\d+$/.test(v) ? Number(v) : NaN;
    if (!Number.isInteger(n) || n < 1 || n > max)
      throw new InvalidArgumentError(`${name} takes a whole number from 1 to ${max}, or plan for the plan's limit, not "${v}"`);
    return n;
  };

/** A key's `meta` (decision 106): a JSON object of at most KEY_META_MAX_BYTES bytes; `{}` removes it. */
export const keyMeta = (name: string) => (v: string) => {
  let meta: unknown;
  try {
    meta = JSON.parse(v);
  } catch {
    throw new InvalidArgumentError(`${name} takes a JSON object such as {"customer":"c_123"}, not JSON: ${JSON.stringify(v.slice(0, 80))}`);
  }
  if (typeof meta !== 'object' || meta === null || Array.isArray(meta))
    throw new InvalidArgumentError(`${name} takes a JSON object such as {"customer":"c_123"}, not ${JSON.stringify(v.slice(0, 80))}`);
  if (metaBytes(meta) > KEY_META_MAX_BYTES)
    throw new InvalidArgumentError(`${name} takes at most ${KEY_META_MAX_BYTES} bytes of JSON, not ${metaBytes(meta)}`);
  return meta as Record<string, unknown>;
};

export const hashPrefix = (name: string) => (v: string) => {
  if (!isHashPrefix(v)) throw new InvalidArgumentError(hashPrefixExpected(name, v));
  return v.toLowerCase();
};

/** `--expires`: an ISO 8601 instant still to come, or `+N` hours or days (`+12h`, `+30d`) from now. */
export const expiry = (name: string) => (v: string) => {
  const span = SPAN.exec(v);
  if (span && Number(span[1]) >= 1) return { after: spanMs(name, v, span) } satisfies Expiry;
  const at = isoInstantMs(v);
  if (!Number.isFinite(at))
    throw new InvalidArgumentError(
      `${name} takes an ISO 8601 instant such as 2026-12-31T00:00:00Z, or +N hours or days such as +12h or +30d, not "${v}"`,
    );
  if (at <= Date.now()) throw new InvalidArgumentError(`${name} ${v} has already passed; give an instant still to come`);
  return { at } satisfies Expiry;
};

/** `keys roll --overlap`: `+N` hours or days (`+0h` ends the old key at once). */
export const overlap = (name: string) => (v: string) => {
  const span = SPAN.exec(v);
  if (!span) throw new InvalidArgumentError(`${name} takes +N hours or days such as +24h or +7d (+0h: at once), not "${v}"`);
  return spanMs(name, v, span);
};

export const httpUrl = (name: string) => (v: string) => {
  if (v === '/') return v;
  try {
    if (/^https?:$/.test(new URL(v).protocol)) return v;
  } catch {
    // reported below
  }
  throw new InvalidArgumentError(`${name} takes an http(s) URL such as https://api.example.com, or /, not "${v}"`);
};

/**
 * `serve --cors-origin`, repeatable: an origin browsers may call from (decision 105), kept as a browser's `Origin`
 * carries it (`https://Dash.example.com:443` is `https://dash.example.com`), or `*`.
 */
export const corsOrigin =
  (name: string) =>
  (v: string, previous: string[] = []): string[] => {
    const origin = allowedOrigin(v);
    if (origin === null) throw new InvalidArgumentError(`${name} takes ${ORIGIN_FORM}, not "${v}"`);
    return [...previous, origin];
  };

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const oneOf = (name: string, values: readonly string[]) => (v: string) => {
  if (!values.includes(v)) throw new InvalidArgumentError(`${name} is one of ${values.join(', ')}, not "${v}"`);
  return v;
};

export const plan = (v: string) => {
  if (!(PLANS as readonly string[]).includes(v)) throw new InvalidArgumentError('--plan is basic, pro or ultra');
  return v;
};
export const logLevel = oneOf('--log-level', LOG_LEVELS);

/**
 * A path the command was given that is not there, or not the kind it takes: bad usage (exit 2, as for any other
 * option value), printed as `risk-readings: <option> <path>: <why>` with no commander preamble. Thrown while the
 * command line is parsed, so nothing of the command has run.
 */
class PathUsageError extends Error {}

/**
 * The path rule (path-rule.ts) as the command line applies it, before anything runs: the path as given, or a
 * `PathUsageError` saying why not.
 */
function checkPath(option: string, path: string, kind: PathKind, hint?: string): string {
  const problem = pathProblem(option, path, kind, hint);
  if (problem) throw new PathUsageError(problem);
  return path;
}

/** The path rule as an option's or argument's parser: `.option('--keys <file>', about, existingPath('--keys', 'file'))`. */
export const existingPath = (option: string, kind: PathKind, hint?: string) => (v: string) => checkPath(option, v, kind, hint);

/** The same for a variadic argument (`<file...>`): commander hands it one value at a time, with those before. */
export const existingPaths =
  (name: string, kind: PathKind) =>
  (v: string, previous: string[] = []): string[] => [...previous, checkPath(name, v, kind)];

/** A secret given on the command line is visible to every user of the machine (`ps`): say so, and how else. */
export function warnSecretOnCommandLine(option: string, env: string, file?: string): void {
  process.stderr.write(
    `warning: ${option} on the command line is visible to other users in the process list; set ${env}${file ? ` or pass ${file}` : ''} instead\n`,
  );
}

/** `serve --quotas` and `usage --quotas`: a Redis URL with a password in it is said, as any secret on the line. */
export function warnPasswordInQuotas(quotas: string | undefined): void {
  if (quotas && /^rediss?:\/\/[^/]*:[^/@]*@/.test(quotas)) warnSecretOnCommandLine('a password in --quotas', 'RISK_READINGS_QUOTAS');
}

/** The quota database's name in the tree's folder when serve is given no --quotas: outside v1/, never served. */
export const DEFAULT_QUOTAS = '.risk-readings-quotas.sqlite';

/** What a Redis URL looks like, as a message says it. */
const REDIS_URL_FORM = 'redis://[:password@]HOST[:PORT][/DB] (rediss:// for TLS)';

/** A store's value as a message may show it: whatever precedes an `@` (a password) hidden. */
const shownStore = (v: string) => v.replace(/^([a-z]+:?\/*)[^@/]*@/i, '$1***@');

const isLoopback = (host: string) => host === 'localhost' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);

/** `--quotas` given a Redis URL: one the stores can connect to, or usage (exit 2) saying what one looks like. */
function redisUrl(option: string, v: string): string {
  let ok = false;
  try {
    const u = new URL(v);
    ok = /^rediss?:\/\//.test(v) && u.hostname !== '' && /^(\/\d*)?$/.test(u.pathname);
  } catch {
    // reported below
  }
  if (!ok) throw new PathUsageError(`${option} ${shownStore(v)}: not a Redis URL; a Redis URL looks like ${REDIS_URL_FORM}`);
  return v;
}

/**
 * `usage --quotas` given a worker's URL (decision 98): https, without a user or password (the operator token is
 * RISK_READINGS_OPERATOR_TOKEN), or http to this machine only (`wrangler dev`), since the token goes with it.
 */
function workerUrl(option: string, v: string): string {
  let u: URL | null = null;
  try {
    u = /^https?:\/\//.test(v) ? new URL(v) : null;
  } catch {
    // reported below
  }
  if (!u?.hostname)
    throw new PathUsageError(`${option} ${shownStore(v)}: not a URL; an edge deployment's URL looks like https://HOST/ (its worker's)`);
  if (u.username || u.password)
    throw new PathUsageError(
      `${option} ${shownStore(v)}: a worker's URL carries no user or password; the operator token goes in RISK_READINGS_OPERATOR_TOKEN`,
    );
  if (u.protocol === 'http:' && !isLoopback(u.hostname))
    throw new PathUsageError(
      `${option} ${v}: the operator token goes over https only (http only to this machine, as wrangler dev serves it)`,
    );
  return v;
}

/**
 * A value that names a store by URL, checked (exit 2 otherwise): Redis; a worker's (http, https), which `usage` reads
 * and `serve` cannot count in; any other `scheme://`, which is no store. Null when the value is no URL (a path, or
 * `memory`). What looks like a Redis URL but is not one (`redis:/host`, `redis:host`, `redis//host`) is refused
 * saying what one looks like, never taken for a path.
 */
function storeUrl(option: string, v: string, command: 'serve' | 'usage'): string | null {
  if (/^rediss?(:|\/\/)/i.test(v)) return redisUrl(option, v);
  if (/^https?(:|\/\/)/i.test(v)) {
    if (command === 'usage') return workerUrl(option, v);
    throw new PathUsageError(
      `${option} ${shownStore(v)}: an edge deployment's URL, which only usage reads; serve counts in a file, a Redis URL or memory`,
    );
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(v))
    throw new PathUsageError(
      `${option} ${shownStore(v)}: no quota store; give a file, ${REDIS_URL_FORM}` +
        (command === 'usage' ? " or the worker's https:// URL" : ''),
    );
  return null;
}

/** `serve --quotas`: Redis and `memory` as given; any other value is the file the counts are kept in. */
export const quotaStore = (option: string) => (v: string) =>
  v === 'memory' ? v : (storeUrl(option, v, 'serve') ?? checkPath(option, v, 'new file'));

/**
 * `usage --quotas`: the store a running `serve` counts in, to read: Redis as given, or a quota file that is there;
 * or an edge deployment's worker (decision 98). `memory` is no store another process can read.
 */
export const quotaCounts = (option: string) => (v: string) => {
  if (v === 'memory')
    throw new PathUsageError(
      `${option} memory: a store in memory dies with its process; give the quota file or redis://HOST:PORT serve counts in, ` +
        "or an edge deployment's https:// URL",
    );
  // A database gone while its witness stays is damage, said by the store (exit 3), not a mistyped name.
  if (existsSync(`${v}.id`)) return v;
  return storeUrl(option, v, 'usage') ?? checkPath(option, v, 'file', `serve writes it, by default <public>/${DEFAULT_QUOTAS}`);
};

/**
 * The tree folder option shared by check, serve and preview (and diff's arguments: treeArgument); `--out` is the
 * older spelling on check. It names the folder a build's `--out` wrote `v1/` into: a folder holding no built tree is
 * usage (exit 2, decisions 77 and 90), and so is the tree's own folder (`.../v1`), given for the folder that holds it;
 * the message says which folder to pass.
 */
export function treeFolder(command: string, o: { public?: string; out?: string }, resolve: (p: string) => string): string {
  if (o.out !== undefined) process.stderr.write(`warning: ${command} --out is deprecated; use --public (the folder holding v1/)\n`);
  const option = o.public !== undefined ? '--public' : '--out';
  const dir = o.public ?? o.out;
  if (dir === undefined) throw new Error(`${command}: --public <dir> is required (the folder holding v1/)`);
  return holdingTree(option, dir, resolve(dir));
}

/** `diff`'s OLD and NEW: each a folder holding a built tree, held to treeFolder's rule. */
export const treeArgument = (name: string) => (v: string) => {
  holdingTree(name, checkPath(name, v, 'folder'), resolvePath(v));
  return v;
};

/** `full` (given as `dir` for `option`) when it holds a built tree's v1/; else why not, and which folder to pass. */
function holdingTree(option: string, dir: string, full: string): string {
  if (liveTree(full)) return full;
  if (!existsSync(join(full, TREE.manifest)))
    throw new PathUsageError(`${option} ${dir}: holds no v1/, no built tree; pass the folder a build's --out wrote v1/ into`);
  // A tree itself: `<out>/v1` (a link to `<out>/.trees/<id>`), or that folder under `.trees`.
  const holder = basename(full) === 'v1' ? dirname(full) : basename(dirname(full)) === '.trees' ? dirname(dirname(full)) : null;
  throw new PathUsageError(
    `${option} ${dir}: a tree's own folder (it holds ${TREE.manifest}), not the folder holding v1/; ` +
      (holder && liveTree(holder) ? `pass ${holder}` : "pass the folder a build's --out wrote v1/ into"),
  );
}
