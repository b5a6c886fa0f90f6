/**
 * What `--help` says beyond one line per option: the longer texts of commands and options, and each command's
 * examples, kept here so that cli.ts reads as one line per option.
 */
import { DEFAULT_QUOTAS, LOG_LEVELS } from './options.js';

/**
 * The fields of a `usage --json` row and the columns of its `--csv`, as its help names them: here, so that `--help`
 * need not load the usage command. The terms of decision 106 come after the columns of decision 87, so a reader of
 * the older columns reads on.
 */
export const USAGE_COLUMNS = ['credential', 'label', 'plan', 'month', 'requests', 'revoked', 'per_minute', 'per_month', 'meta'] as const;

/** The longer help texts, by command or option. */
export const HELP = {
  build:
    'parse the site in --pages and write the tree to --out/v1 (exit 0 published, 1 input refused, 2 usage, 3 environment, 4 published carrying readings)',
  buildCatalog: "the asset catalogue (default: the pages folder's catalog.json if it has one, else the committed one)",
  previous:
    'the previous tree holding the history ledger: a folder holding v1/, or the URL of a deployed tree (default: --out); ' +
    'a bearer token for the URL from RISK_READINGS_PREVIOUS_TOKEN',
  publicUrl: "the base URL clients call, written as the served OpenAPI document's servers (default /, the origin serving it)",
  quotas:
    `where quota counts live: a SQLite database (default <public>/${DEFAULT_QUOTAS}, kept across restarts), Redis shared by a fleet, ` +
    'or this process only; also RISK_READINGS_QUOTAS (a Redis URL with a password belongs there)',
  discardDamaged:
    'when the quota database fails its check, count on from the rows that still read (moving the damaged files aside) instead of exiting 3',
  usage:
    "each key's requests in a calendar month (UTC) from the quota store serve or the edge counts in, with its label and plan: what to invoice",
  usageQuotas:
    "the quota store to read: the file or Redis serve counts in, or an edge deployment's worker URL (https://HOST/, its operator token " +
    'from RISK_READINGS_OPERATOR_TOKEN); default RISK_READINGS_QUOTAS',
  serveKeys: 'the credential store (without it data endpoints answer 503); reloaded within 2 s of a change',
  marketplaceSecretFile: 'a file holding the marketplace proxy secret (or RISK_READINGS_MARKETPLACE_SECRET)',
  quotasWait: 'how long to wait for another process to let go of the quota file, as in a rolling restart (30s, 2m), then exit 3',
  staleAfter: 'health reads "stale" once the newest reading is older than this (36h, 90m, 2d; bare numbers are hours)',
  marketplaceName: "the marketplace's name in its header names, x-<name>-key (besides the neutral x-marketplace-*)",
  corsOrigin:
    'let pages on this origin call the API from a browser (https://dash.example.com; * for any page); repeatable. ' +
    'Without it no data route answers a browser from another origin',
  webhooksAllowLoopback:
    'deliver webhooks to this machine (loopback), over plain http, and to any port of any host: for tests and demos, never in production',
  webhooksAllowPort: 'an https port besides 443 webhook URLs may name; repeatable',
  webhooks: "customers' webhook endpoints in the store serve keeps them in: list them, disable one, enable it again",
  webhookStore:
    "the SQLite database or Redis serve keeps endpoints in (its --quotas), or an edge deployment's worker URL (https://HOST/, its operator token from RISK_READINGS_OPERATOR_TOKEN); default RISK_READINGS_QUOTAS",
  disableReason: "why, kept in the endpoint's disabled_reason for its owner to read",
  logLevel: `access and operations log on stdout, one JSON line each: ${LOG_LEVELS.join(', ')}`,
  check: 'validate an existing tree against the contract, the invariants and its manifest (compressed variants included)',
  diff: 'what changed between two built trees: 0 none, 1 changes, 2 trouble, 3 a published history row changed or vanished',
  add: 'issue a direct key: prints it once, alone, on stdout; stores only its SHA-256',
  set: "change keys' own terms (limits, meta) by label or hash prefix; a running server applies them within 2 s, counts kept",
  perMinute: "the key's own requests per minute (1 to 100000), replacing its plan's; plan returns to the plan's",
  perMonth: "the key's own requests per month (1 to 1000000000), replacing its plan's; plan returns to the plan's",
  meta: "a JSON object of the operator's own (customer id, contact), at most 1024 bytes; never served; {} removes it",
  list: 'list the keys: hash prefix, plan, state (active, expiring, expired), created, expires, label (never the key)',
  revoke: 'revoke keys by label, or the one key whose hash starts with a prefix; a running server drops them within 2 s',
  expires: 'when the key stops working: an ISO 8601 instant (2026-12-31T00:00:00Z) or +N hours or days from now (+12h, +30d)',
  roll: "replace a label's keys: prints a new key with their plan and label once, alone, on stdout; the old ones keep working until the overlap ends",
  rollExpires: 'when the new key ends (default: when the keys it replaces would have, if they all end; else never)',
  overlap: 'how long the replaced keys keep working: +N hours or days (+0h: they stop at once)',
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
  $ risk-readings keys add --keys keys.json --plan basic --label "Trial: Beta Ltd" --expires +14d
  $ risk-readings keys roll --keys keys.json --label "Acme Corp" --overlap +48h   # the old key works 48 h more
  $ risk-readings keys set --keys keys.json --label "Acme Corp" --per-minute 120 --meta '{"customer":"c_123"}'
  $ risk-readings keys list --keys keys.json
  $ risk-readings keys revoke --keys keys.json --label "Acme Corp"`,
  check: `
Examples:
  $ risk-readings check --public public`,
  usage: `
Examples:
  $ risk-readings usage --quotas public/.risk-readings-quotas.sqlite --keys keys.json             # this month so far
  $ risk-readings usage --quotas redis://127.0.0.1:6379 --keys keys.json --month 2026-10 --csv > 2026-10.csv
  $ read -rs RISK_READINGS_OPERATOR_TOKEN && export RISK_READINGS_OPERATOR_TOKEN   # the worker's OPERATOR_TOKEN
  $ risk-readings usage --quotas https://api.example.com/ --keys keys.json --month 2026-10          # an edge deployment`,
  webhooks: `
Examples:
  $ risk-readings webhooks list --quotas public/.risk-readings-quotas.sqlite
  $ risk-readings webhooks disable ep_0123456789abcdef01234567 --quotas redis://127.0.0.1:6379 --reason "answers 500 to every message"
  $ risk-readings webhooks enable ep_0123456789abcdef01234567 --quotas redis://127.0.0.1:6379`,
};
