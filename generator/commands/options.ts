/** Option values as the commands take them: each parser names the option and what it expects (exit 2 otherwise). */
import { InvalidArgumentError } from 'commander';
import { isCalendarDate } from '../contract/time.js';
import { PLANS } from '../contract/plans.js';

export const positiveInt = (name: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`${name} takes a whole number from 1, not "${v}"`);
  return n;
};

/** A TCP port, 1-65535. */
export const port = (name: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 65_535) throw new InvalidArgumentError(`${name} takes a port from 1 to 65535, not "${v}"`);
  return n;
};

/** A calendar date YYYY-MM-DD that exists. */
export const calendarDate = (name: string) => (v: string) => {
  if (!isCalendarDate(v)) throw new InvalidArgumentError(`${name} takes a date YYYY-MM-DD, not "${v}"`);
  return v;
};

/** An ISO 8601 instant. */
export const instant = (name: string) => (v: string) => {
  if (!/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2}))?$/.test(v) || !Number.isFinite(Date.parse(v))) {
    throw new InvalidArgumentError(`${name} takes an ISO 8601 time such as 2026-10-14T00:30:00Z, not "${v}"`);
  }
  return v;
};

/** A duration: a number with a unit s, m, h or d (hours when bare), in milliseconds. */
export const duration = (name: string) => (v: string) => {
  const m = /^(\d+(?:\.\d+)?)([smhd]?)$/.exec(v.trim());
  const ms = m ? Number(m[1]) * { s: 1e3, m: 6e4, h: 3.6e6, d: 8.64e7, '': 3.6e6 }[m[2] as 's' | 'm' | 'h' | 'd' | ''] : NaN;
  if (!(ms > 0)) throw new InvalidArgumentError(`${name} takes a duration such as 36h, 90m or 2d, not "${v}"`);
  return ms;
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

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export const oneOf = (name: string, values: readonly string[]) => (v: string) => {
  if (!values.includes(v)) throw new InvalidArgumentError(`${name} is one of ${values.join(', ')}, not "${v}"`);
  return v;
};

export const plan = (v: string) => {
  if (!(PLANS as readonly string[]).includes(v)) throw new InvalidArgumentError('--plan is basic, pro or ultra');
  return v;
};
export const logLevel = oneOf('--log-level', LOG_LEVELS);

/** The tree folder option shared by check, serve and preview; `--out` is the older spelling on check. */
export function treeFolder(command: string, o: { public?: string; out?: string }, resolve: (p: string) => string): string {
  if (o.out !== undefined) process.stderr.write(`warning: ${command} --out is deprecated; use --public (the folder holding v1/)\n`);
  const dir = o.public ?? o.out;
  if (dir === undefined) throw new Error(`${command}: --public <dir> is required (the folder holding v1/)`);
  return resolve(dir);
}

/** The longer help texts, kept here so that cli.ts reads as one line per option. */
export const HELP = {
  build:
    'parse the site in --pages and write the tree to --out/v1 (exit 0 published, 1 input refused, 2 usage, 3 environment, 4 published carrying readings)',
  previous:
    'the previous tree holding the history ledger: a folder holding v1/, or the URL of a deployed tree (default: --out); ' +
    'a bearer token for the URL from RISK_READINGS_PREVIOUS_TOKEN',
  publicUrl: "the base URL clients call, written as the served OpenAPI document's servers (default /, the origin serving it)",
  quotas:
    'where quota counts live: a file (default <public>/.risk-readings-quotas.json, kept across restarts), Redis shared by a fleet, ' +
    'or this process only; also RISK_READINGS_QUOTAS (a Redis URL with a password belongs there)',
  quotasWait: 'how long to wait for another process to let go of the quota file, as in a rolling restart (30s, 2m), then exit 3',
  staleAfter: 'health reads "stale" once the newest reading is older than this (36h, 90m, 2d; bare numbers are hours)',
  marketplaceName: "the marketplace's name in its header names, x-<name>-key (besides the neutral x-marketplace-*)",
  logLevel: `access and operations log on stdout, one JSON line each: ${LOG_LEVELS.join(', ')}`,
  check: 'validate an existing tree against the contract, the invariants and its manifest (compressed variants included)',
  diff: 'what changed between two built trees: 0 none, 1 changes, 2 trouble, 3 a published history row changed or vanished',
  revoke: 'revoke keys by label, or the one key whose hash starts with a prefix; a running server drops them within 2 s',
};

/** What `--help` shows after a command's options: the invocations an operator or a pipeline starts from. */
export const EXAMPLES: Record<string, string> = {
  build: `
Examples:
  $ risk-readings build --pages site/ --out public --init          # the first build: starts the history ledger
  $ risk-readings build --pages site/ --out public                 # each refresh: continues public/v1
  $ risk-readings build --pages site/ --out public --previous https://cdn.example.com/ --keep-going --json`,
  diff: `
Examples:
  $ risk-readings diff yesterday/ public/                          # grouped, one line per change
  $ risk-readings diff yesterday/ public/ --asset BTC --json | jq '.events'`,
  serve: `
Examples:
  $ risk-readings serve --public public --keys keys.json
  $ risk-readings serve --public public --keys keys.json --quotas redis://127.0.0.1:6379 --metrics-port 9464`,
  keys: `
Examples:
  $ risk-readings keys add --keys keys.json --plan pro --label "Acme Corp"   # prints the key once
  $ risk-readings keys list --keys keys.json
  $ risk-readings keys revoke --keys keys.json --label "Acme Corp"`,
  check: `
Examples:
  $ risk-readings check --public public`,
};
