/**
 * `risk-readings usage` (decision 38), run as an operator runs it: each key's requests in a month, from the quota file
 * or Redis that `serve` counts in, with the key file's labels and plans; the formats a bill is made from; the exit
 * statuses (0; 1 a store or key file that cannot be read; 2 usage). The store from RISK_READINGS_QUOTAS, and what
 * `--quotas` takes for a URL (decision 98); an edge deployment's worker is read in test/auth-shim/edge-usage.test.ts.
 */
import { createHash, randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteQuotaStore } from '../../../auth-shim/node/quota-sqlite.js';
import { RedisQuotaStore } from '../../../auth-shim/node/quota-redis.js';
import { monthOf, type Limits } from '../../../auth-shim/quota.js';
import { PLAN_LIMITS, type Plan } from '../../../generator/contract/plans.js';
import { addKey, revokeKeys } from '../../../generator/keys.js';
import { quotaCounts, quotaStore } from '../../../generator/commands/options.js';
import { cliAsync, ROOT, tempDir } from '../../helpers.js';
import { freePort, redisAway, REDIS_URL, removesAddedKeys } from '../../services.js';

const root = tempDir('rr-usage-');
const keysFile = join(root, 'keys.json');
const quotaFile = join(root, 'quotas.sqlite');
const sha = (key: string) => createHash('sha256').update(key).digest('hex');
const lots: Limits = { perMinute: 1_000_000, perMonth: 1_000_000 };
const SEPT = Date.UTC(2026, 8, 10);
const OCT = Date.UTC(2026, 9, 10);
/** A credential counted in the store of which the key file keeps nothing (removed by hand): billed by its hash prefix. */
const UNKNOWN = `key:${randomBytes(32).toString('hex')}`;
/** When `keys revoke` removed the key labelled Gone Ltd, counted in September. */
const REVOKED_AT = new Date(Date.UTC(2026, 8, 20, 12));
let keys: { acme: string; beta: string; idle: string; gone: string };

/** `n` requests of `credential` from `at`, one a second. */
function count(store: SqliteQuotaStore | RedisQuotaStore, credential: string, at: number, n: number) {
  return Promise.all(Array.from({ length: n }, (_, i) => store.take(credential, lots, at + i * 1_000, monthOf(at))));
}

beforeAll(async () => {
  keys = {
    acme: await addKey(keysFile, 'pro', 'Acme Corp'),
    beta: await addKey(keysFile, 'basic', 'Beta, "the second" Ltd'),
    idle: await addKey(keysFile, 'ultra', 'Idle'),
    gone: await addKey(keysFile, 'ultra', 'Gone Ltd'),
  };
  const store = await SqliteQuotaStore.open(quotaFile);
  await count(store, `key:${sha(keys.acme)}`, SEPT, 7);
  await count(store, `key:${sha(keys.acme)}`, OCT, 3);
  await count(store, `key:${sha(keys.beta)}`, SEPT, 2);
  await count(store, UNKNOWN, SEPT, 4);
  await count(store, `key:${sha(keys.gone)}`, SEPT, 9);
  await count(store, `key:${sha(keys.beta)}`, Date.now(), 5);
  await store.close();
  await revokeKeys(keysFile, { label: 'Gone Ltd' }, REVOKED_AT);
});

const usage = (...args: string[]) => cliAsync(['usage', '--keys', keysFile, ...args]);

describe('risk-readings usage', () => {
  it('--json: each key of the key file in its order, then each key revoked, then each other credential counted', async () => {
    const r = await usage('--quotas', quotaFile, '--month', '2026-09', '--json');
    expect(r.status, r.stderr).toBe(0);
    const row = (credential: string, label: string | null, plan: string | null, requests: number, revoked: string | null = null) => ({
      credential,
      label,
      plan,
      month: '2026-09',
      requests,
      revoked,
      // The limits in effect and meta (decision 106): these keys have none of their own.
      per_minute: plan && PLAN_LIMITS[plan as Plan].perMinute,
      per_month: plan && PLAN_LIMITS[plan as Plan].perMonth,
      meta: null,
    });
    expect(JSON.parse(r.stdout)).toEqual([
      row(`key:${sha(keys.acme).slice(0, 8)}`, 'Acme Corp', 'pro', 7),
      row(`key:${sha(keys.beta).slice(0, 8)}`, 'Beta, "the second" Ltd', 'basic', 2),
      row(`key:${sha(keys.idle).slice(0, 8)}`, 'Idle', 'ultra', 0),
      // Revoked in the month it used: still invoiced under its customer and plan (decision 87).
      row(`key:${sha(keys.gone).slice(0, 8)}`, 'Gone Ltd', 'ultra', 9, '2026-09-20T12:00:00Z'),
      row(UNKNOWN.slice(0, 12), null, null, 4),
    ]);
    expect(r.stderr).toBe(`2026-09 (UTC), counted in ${quotaFile}\n`);
  });

  it('--csv: the same columns with a header line, quoted where a label needs it', async () => {
    const r = await usage('--quotas', quotaFile, '--month', '2026-10', '--csv');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe(
      [
        'credential,label,plan,month,requests,revoked,per_minute,per_month,meta',
        `key:${sha(keys.acme).slice(0, 8)},Acme Corp,pro,2026-10,3,,20,50000,`,
        `key:${sha(keys.beta).slice(0, 8)},"Beta, ""the second"" Ltd",basic,2026-10,0,,5,1000,`,
        `key:${sha(keys.idle).slice(0, 8)},Idle,ultra,2026-10,0,,60,500000,`,
        '',
      ].join('\n'),
    );
  });

  it('a revoked key in the table: its label, plan and when it was revoked, never "(not in the key file)"', async () => {
    const r = await usage('--quotas', quotaFile, '--month', '2026-09');
    expect(r.status, r.stderr).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines).toContainEqual(
      expect.stringMatching(
        new RegExp(`^key:${sha(keys.gone).slice(0, 8)}\\s+ultra\\s+9\\s+60\\s+500000\\s+Gone Ltd \\(revoked 2026-09-20T12:00:00Z\\)$`),
      ),
    );
    expect(lines).toContainEqual(
      expect.stringMatching(new RegExp(`^${UNKNOWN.slice(0, 12)}\\s+-\\s+4\\s+-\\s+-\\s+\\(not in the key file\\)$`)),
    );
    expect(lines.at(-1)).toMatch(/^total\s+22$/);
  });

  it('the current month (UTC) by default, as a table with its total; the month still open is said so', async () => {
    const r = await usage('--quotas', quotaFile);
    expect(r.status, r.stderr).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^credential\s+plan\s+requests\s+per_minute\s+per_month\s+label$/);
    expect(lines[2]).toMatch(new RegExp(`^key:${sha(keys.beta).slice(0, 8)}\\s+basic\\s+5\\s+5\\s+1000\\s+Beta, "the second" Ltd$`));
    expect(lines.at(-1)).toMatch(/^total\s+5$/);
    const month = new Date().toISOString().slice(0, 7);
    expect(r.stderr).toBe(`${month} (UTC), counted in ${quotaFile}; the month has not ended, so these counts still grow\n`);
  });

  it('reads the file a running store holds, without taking its lock or stopping it', async () => {
    const file = join(root, 'held.sqlite');
    const store = await SqliteQuotaStore.open(file, { flushMs: 50 });
    try {
      await count(store, `key:${sha(keys.idle)}`, OCT, 6);
      await store.flush();
      const lock = readFileSync(`${file}.lock`, 'utf8');
      const r = await usage('--quotas', file, '--month', '2026-10', '--json');
      expect(r.status, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)[2]).toMatchObject({ label: 'Idle', requests: 6 });
      expect(readFileSync(`${file}.lock`, 'utf8')).toBe(lock);
      expect(store.take(`key:${sha(keys.idle)}`, lots, OCT + 10_000, monthOf(OCT))).toMatchObject({ ok: true, monthUsed: 7 });
    } finally {
      await store.close();
    }
  });

  it('exit 2 for usage, naming the option: a path that is not there, a memory store, a malformed month, two formats', async () => {
    const cases: [string[], RegExp][] = [
      [
        ['--quotas', join(root, 'nope.json')],
        new RegExp(
          `^risk-readings: --quotas ${join(root, 'nope.json')}: no such file \\(serve writes it, by default <public>/\\.risk-readings-quotas\\.sqlite\\)`,
        ),
      ],
      [
        ['--quotas', quotaFile, '--keys', join(root, 'nope-keys.json')],
        new RegExp(`^risk-readings: --keys ${join(root, 'nope-keys.json')}: no such file`),
      ],
      [['--quotas', root], new RegExp(`^risk-readings: --quotas ${root}: not a file`)],
      [['--quotas', 'memory'], /^risk-readings: --quotas memory: a store in memory dies with its process/],
      [['--quotas', quotaFile, '--month', '2026-13'], /--month takes a month YYYY-MM such as 2026-10, not "2026-13"/],
      [['--quotas', quotaFile, '--json', '--csv'], /'--json' cannot be used with option '--csv'/],
    ];
    for (const [args, message] of cases) {
      const r = await usage(...args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stdout).toBe('');
    }
  });

  it('exit 3 for a damaged store, exit 1 for a key file or a Redis that cannot be read, named', async () => {
    const damaged = join(root, 'damaged.json');
    writeFileSync(damaged, '{"schema": 2, "journal": 1, "credentials": {"key:ab');
    const cut = await usage('--quotas', damaged);
    expect(cut.status).toBe(3);
    expect(cut.stderr).toMatch(new RegExp(`^risk-readings usage: ${damaged}: not JSON \\(.+\\); restore it from ${damaged}\\.bak`));
    // The key file given as the store (a JSON document of another kind): named as the wrong file, with the right one.
    const keysAsStore = await usage('--quotas', keysFile);
    expect(keysAsStore.status).toBe(3);
    expect(keysAsStore.stderr).toMatch(
      /: a JSON document, but not the quota file of an earlier release .*--quotas takes the quota database/,
    );
    const notJson = join(root, 'not-json-keys.json');
    writeFileSync(notJson, '{"keys": [');
    const port = await freePort();
    const cases: [string[], RegExp][] = [
      [['--quotas', quotaFile, '--keys', notJson], new RegExp(`^risk-readings usage: ${notJson}: cannot read the key store`)],
      [
        ['--quotas', `redis://127.0.0.1:${port}`],
        new RegExp(`^risk-readings usage: redis://127.0.0.1:${port}: cannot read the quota counts`),
      ],
    ];
    for (const [args, message] of cases) {
      const r = await usage(...args);
      expect(r.status, args.join(' ')).toBe(1);
      expect(r.stderr).toMatch(message);
    }
  });
});

describe('usage: the store from RISK_READINGS_QUOTAS, and URLs given for one', () => {
  const REDIS_FORM = 'a Redis URL looks like redis://[:password@]HOST[:PORT][/DB] (rediss:// for TLS)';

  it('reads the store RISK_READINGS_QUOTAS names when --quotas is not given, as serve does; --quotas wins over it', async () => {
    const r = await cliAsync(['usage', '--keys', keysFile, '--month', '2026-09', '--json'], { RISK_READINGS_QUOTAS: quotaFile });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)[0]).toMatchObject({ label: 'Acme Corp', requests: 7 });
    expect(r.stderr).toBe(`2026-09 (UTC), counted in ${quotaFile}\n`);
    const given = await cliAsync(['usage', '--keys', keysFile, '--quotas', quotaFile, '--month', '2026-10', '--json'], {
      RISK_READINGS_QUOTAS: 'redis:/nowhere',
    });
    expect(given.status, given.stderr).toBe(0);
    expect(JSON.parse(given.stdout)[0]).toMatchObject({ label: 'Acme Corp', requests: 3 });
  });

  it('exit 2 without a store, or with one in RISK_READINGS_QUOTAS that is not one, naming the variable', async () => {
    const none = await cliAsync(['usage', '--keys', keysFile], { RISK_READINGS_QUOTAS: '' });
    expect(none.status).toBe(2);
    expect(none.stderr).toMatch(/^risk-readings: usage: no quota store: give --quotas .* or set RISK_READINGS_QUOTAS\n$/);
    const cases: [string, string][] = [
      ['redis:/host', `risk-readings: RISK_READINGS_QUOTAS redis:/host: not a Redis URL; ${REDIS_FORM}\n`],
      [join(root, 'nope.sqlite'), `risk-readings: RISK_READINGS_QUOTAS ${join(root, 'nope.sqlite')}: no such file`],
      ['memory', 'risk-readings: RISK_READINGS_QUOTAS memory: a store in memory dies with its process'],
    ];
    for (const [value, message] of cases) {
      const r = await cliAsync(['usage', '--keys', keysFile], { RISK_READINGS_QUOTAS: value });
      expect(r.status, value).toBe(2);
      expect(r.stderr.startsWith(message), r.stderr).toBe(true);
      expect(r.stdout).toBe('');
    }
  });

  it('exit 2 for a --quotas that looks like a URL and is not one, saying what one looks like; never a path not there', async () => {
    for (const v of [
      'redis:/host',
      'redis:host',
      'redis//host',
      'rediss:/x',
      'REDIS://host',
      'redis://',
      'redis://host:99999',
      'redis://h/x',
    ])
      expect(() => quotaCounts('--quotas')(v), v).toThrow(`--quotas ${v}: not a Redis URL; ${REDIS_FORM}`);
    // The password is never repeated, however the URL is spelt.
    expect(() => quotaCounts('--quotas')('redis:/:s3cret@host')).toThrow(`--quotas redis:/***@host: not a Redis URL; ${REDIS_FORM}`);
    for (const v of ['https:/x', 'https//x', 'https://', 'http:x'])
      expect(() => quotaCounts('--quotas')(v), v).toThrow(`--quotas ${v}: not a URL; an edge deployment's URL looks like https://HOST/`);
    expect(() => quotaCounts('--quotas')('https://op:pw@api.example.com/')).toThrow(
      "--quotas https://***@api.example.com/: a worker's URL carries no user or password; the operator token goes in RISK_READINGS_OPERATOR_TOKEN",
    );
    expect(() => quotaCounts('--quotas')('http://api.example.com/')).toThrow(
      '--quotas http://api.example.com/: the operator token goes over https only',
    );
    expect(() => quotaCounts('--quotas')('ftp://x/')).toThrow('--quotas ftp://x/: no quota store');
    // What is one is taken as given: Redis, a worker over https, a worker on this machine over http (wrangler dev).
    for (const v of [
      'redis://127.0.0.1:6379',
      'redis://:pw@host:6380/2',
      'rediss://host',
      'https://api.example.com/',
      'http://127.0.0.1:8787/',
    ])
      expect(quotaCounts('--quotas')(v)).toBe(v);
    // serve's parser refuses the same Redis look-alikes the same way, and a worker's URL, which it cannot count in.
    expect(() => quotaStore('--quotas')('redis:/host')).toThrow(`--quotas redis:/host: not a Redis URL; ${REDIS_FORM}`);
    expect(() => quotaStore('--quotas')('https://api.example.com/')).toThrow(
      "--quotas https://api.example.com/: an edge deployment's URL, which only usage reads",
    );
    expect(quotaStore('--quotas')('redis://127.0.0.1:6379')).toBe('redis://127.0.0.1:6379');

    // As the command line has it: exit 2, one line, nothing on stdout.
    const r = await usage('--quotas', 'redis:/host');
    expect([r.status, r.stdout, r.stderr]).toEqual([2, '', `risk-readings: --quotas redis:/host: not a Redis URL; ${REDIS_FORM}\n`]);
  });

  it('warns of a Redis password on the command line, and names RISK_READINGS_QUOTAS', async () => {
    const port = await freePort();
    const r = await usage('--quotas', `redis://:hunter2@127.0.0.1:${port}`);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(
      /^warning: a password in --quotas on the command line is visible to other users in the process list; set RISK_READINGS_QUOTAS instead\n/,
    );
    expect(r.stderr).not.toContain('hunter2');
  });
});

describe('docs/billing.md: invoicing last month, one command', () => {
  /**
   * Runs the documented command in bash with `date` reading `now` as the clock (an instant it is given, `-d`, is
   * taken as it is; a relative one, `-d 'last month'`, from `now`) and `npx` printing its arguments: what month the
   * command asks for, and what file it writes.
   */
  function invoice(now: string): { args: string[]; files: string[] } {
    const doc = readFileSync(join(ROOT, 'docs', 'billing.md'), 'utf8');
    const command = /## Invoicing last month: one command[\s\S]*?```sh\n([\s\S]*?)```/.exec(doc)![1]!;
    const dir = tempDir('rr-billing-doc-');
    const script = `
      date() {
        local args=() d=""
        while [ $# -gt 0 ]; do if [ "$1" = -d ]; then d="$2"; shift 2; else args+=("$1"); shift; fi; done
        if [ -z "$d" ]; then d="${now}"; elif [[ ! "$d" =~ ^[0-9] ]]; then d="${now} $d"; fi
        command date -d "$d" "\${args[@]}"
      }
      npx() { printf '%s\\n' "$@"; }
      ${command}`;
    const r = spawnSync('bash', ['-c', script], { cwd: dir, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    return { args: readdirSync(dir).flatMap((f) => readFileSync(join(dir, f), 'utf8').trim().split('\n')), files: readdirSync(dir) };
  }

  it.each([
    ['2026-10-31 12:00 UTC', '2026-09'], // 'last month' from the 31st is September 31st: October 1st
    ['2026-03-31 00:10 UTC', '2026-02'],
    ['2026-11-01 00:05 UTC', '2026-10'],
    ['2027-01-01 00:05 UTC', '2026-12'],
  ])('run at %s, it invoices %s', (now, month) => {
    const { args, files } = invoice(now);
    expect(args.slice(args.indexOf('--month'), args.indexOf('--month') + 2)).toEqual(['--month', month]);
    expect(files).toEqual([`usage-${month}.csv`]);
  });
});

const redisAwayNow = await redisAway('the Redis usage test');
// The default prefix, as serve counts in it: every key this file adds there is removed when it ends.
if (redisAwayNow === null) await removesAddedKeys(REDIS_URL);

describe.skipIf(redisAwayNow !== null)(`risk-readings usage on Redis (skipped: ${redisAwayNow ?? 'Redis answers'})`, () => {
  // In a month no other test or server counts in: 2031-05.
  const MAY_2031 = Date.UTC(2031, 4, 3);
  const own = `key:${randomBytes(32).toString('hex')}`;
  let store: RedisQuotaStore;
  beforeAll(() => void (store = new RedisQuotaStore(REDIS_URL, undefined, { timeoutMs: 10_000 })));
  afterAll(() => store.close());

  it('reads the month from Redis: the keys of the key file, and what else was counted', async () => {
    await count(store, `key:${sha(keys.acme)}`, MAY_2031, 11);
    await count(store, `key:${sha(keys.beta)}`, MAY_2031, 1);
    await count(store, own, MAY_2031, 2);
    const r = await usage('--quotas', REDIS_URL, '--month', '2031-05', '--json');
    expect(r.status, r.stderr).toBe(0);
    const rows = JSON.parse(r.stdout) as { credential: string; requests: number; label: string | null }[];
    expect(rows.slice(0, 3).map((x) => [x.label, x.requests])).toEqual([
      ['Acme Corp', 11],
      ['Beta, "the second" Ltd', 1],
      ['Idle', 0],
    ]);
    expect(rows).toContainEqual({
      credential: own.slice(0, 12),
      label: null,
      plan: null,
      month: '2031-05',
      requests: 2,
      revoked: null,
      per_minute: null,
      per_month: null,
      meta: null,
    });
  });
});
