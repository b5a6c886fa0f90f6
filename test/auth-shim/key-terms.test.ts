/**
 * A key's own terms (decision 106): `keys add` and `keys set` give a key its own per-minute and per-month limits and
 * the operator's `meta`, `keys roll` carries them, `keys list` and `usage` show them; the running Node server applies
 * a change within 2 s, with no count reset, in `/v1/usage`, the rate-limit headers and its 429s; `meta` reaches no
 * answer and no log line.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../auth-shim/node/observe.js';
import { startServer } from '../../auth-shim/node/server.js';
import { SqliteQuotaStore } from '../../auth-shim/node/quota-sqlite.js';
import { monthOf } from '../../auth-shim/quota.js';
import { cli, LATE_MS, tempDir, until } from '../helpers.js';
import { builtTree } from './tree.js';

const root = tempDir('rr-key-terms-');
const SECRET_META = { customer: 'c_secret_4711', contact: 'ops@customer.example' };

const keysAt = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as { keys: Record<string, unknown>[] };

describe('keys add, set, roll and list: a key of its own terms', () => {
  const file = join(root, 'cli-keys.json');

  it('add stores the limits and meta; set changes and clears them; roll carries them; list shows them', () => {
    const added = cli([
      'keys',
      'add',
      '--keys',
      file,
      '--plan',
      'basic',
      '--label',
      'Acme',
      '--per-minute',
      '7',
      '--meta',
      JSON.stringify(SECRET_META),
    ]);
    expect(added.status, added.stderr).toBe(0);
    expect(keysAt(file).keys[0]).toMatchObject({ plan: 'basic', limits: { per_minute: 7 }, meta: SECRET_META });

    const set = cli(['keys', 'set', '--keys', file, '--label', 'Acme', '--per-month', '2500', '--per-minute', 'plan']);
    expect(set.status, set.stderr).toBe(0);
    expect(set.stdout).toMatch(/^set [0-9a-f]{8} basic 5\/min 2500\*\/month Acme\n$/);
    expect(keysAt(file).keys[0]).toMatchObject({ limits: { per_month: 2500 }, meta: SECRET_META });
    expect(keysAt(file).keys[0]!.limits as object).not.toHaveProperty('per_minute');

    const rolled = cli(['keys', 'roll', '--keys', file, '--label', 'Acme', '--overlap', '+1h']);
    expect(rolled.status, rolled.stderr).toBe(0);
    expect(keysAt(file).keys[1]).toMatchObject({ limits: { per_month: 2500 }, meta: SECRET_META });

    const listed = cli(['keys', 'list', '--keys', file, '--json']);
    expect(listed.status, listed.stderr).toBe(0);
    const rows = JSON.parse(listed.stdout) as Record<string, unknown>[];
    expect(rows.map((r) => [r.per_minute, r.per_month, r.own_limits, r.meta])).toEqual([
      [5, 2500, { per_minute: false, per_month: true }, SECRET_META],
      [5, 2500, { per_minute: false, per_month: true }, SECRET_META],
    ]);
    const table = cli(['keys', 'list', '--keys', file]);
    expect(table.stdout.split('\n')[0]).toMatch(/per_minute\s+per_month\s+label\s+meta/);
    expect(table.stdout).toContain('2500*');

    const prefix = (rows[1]!.sha256_prefix as string).slice(0, 8);
    const cleared = cli(['keys', 'set', '--keys', file, '--sha256', prefix, '--per-month', 'plan', '--meta', '{}']);
    expect(cleared.status, cleared.stderr).toBe(0);
    expect(keysAt(file).keys[1]).not.toHaveProperty('limits');
    expect(keysAt(file).keys[1]).not.toHaveProperty('meta');
  });

  it.each([
    [['--per-minute', '0'], '--per-minute'],
    [['--per-minute', '100001'], '--per-minute'],
    [['--per-month', '1.5'], '--per-month'],
    [['--per-month', '1000000001'], '--per-month'],
    [['--meta', '[1]'], '--meta'],
    [['--meta', 'not json'], '--meta'],
    [['--meta', JSON.stringify({ note: 'x'.repeat(1_100) })], '--meta'],
  ])('refuses %j: exit 2 naming %s, the file unchanged', (args, option) => {
    const before = readFileSync(file, 'utf8');
    for (const cmd of [
      ['keys', 'add', '--keys', file, '--plan', 'pro'],
      ['keys', 'set', '--keys', file, '--label', 'Acme'],
    ]) {
      const r = cli([...cmd, ...args]);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(option);
    }
    expect(readFileSync(file, 'utf8')).toBe(before);
  });

  it('set without a term, or without --label/--sha256, is usage (exit 2)', () => {
    expect(cli(['keys', 'set', '--keys', file, '--label', 'Acme']).status).toBe(2);
    expect(cli(['keys', 'set', '--keys', file, '--per-minute', '9']).status).toBe(2);
  });
});

describe('usage shows the limits in effect and meta', () => {
  it('in the table, --json and --csv', async () => {
    const file = join(root, 'usage-keys.json');
    const key = cli([
      'keys',
      'add',
      '--keys',
      file,
      '--plan',
      'pro',
      '--label',
      'Acme',
      '--per-minute',
      '99',
      '--meta',
      '{"customer":"c_1"}',
    ]);
    const plain = cli(['keys', 'add', '--keys', file, '--plan', 'basic', '--label', 'Plain']);
    expect([key.status, plain.status]).toEqual([0, 0]);
    const quotas = join(root, 'usage.sqlite');
    const store = await SqliteQuotaStore.open(quotas);
    await store.take('key:0123456789abcdef', { perMinute: 10, perMonth: 10 }, Date.now(), monthOf(Date.now()));
    await store.close();
    const json = cli(['usage', '--quotas', quotas, '--keys', file, '--json']);
    expect(json.status, json.stderr).toBe(0);
    expect((JSON.parse(json.stdout) as Record<string, unknown>[]).map((r) => [r.label, r.per_minute, r.per_month, r.meta])).toEqual([
      ['Acme', 99, 50_000, { customer: 'c_1' }],
      ['Plain', 5, 1_000, null],
      [null, null, null, null],
    ]);
    const csv = cli(['usage', '--quotas', quotas, '--keys', file, '--csv']).stdout.split('\n');
    expect(csv[0]).toBe('credential,label,plan,month,requests,revoked,per_minute,per_month,meta');
    expect(csv[1]).toMatch(/^key:[0-9a-f]{8},Acme,pro,\d{4}-\d{2},0,,99,50000,"\{""customer"":""c_1""\}"$/);
    const table = cli(['usage', '--quotas', quotas, '--keys', file]).stdout;
    expect(table).toMatch(/per_minute\s+per_month\s+label/);
    expect(table).toMatch(/99\s+50000\s+Acme\s+\{"customer":"c_1"\}/);
  });
});

describe('Node server: the limits in effect, live, with counts kept', () => {
  let server: Server;
  let base = '';
  const keysFile = join(root, 'served-keys.json');
  const logFile = join(root, 'access.log');
  let key = '';
  const get = (path = '/v1/assets/BTC/risk') => fetch(`${base}${path}`, { headers: { 'X-API-Key': key } });

  beforeAll(async () => {
    writeFileSync(keysFile, JSON.stringify({ keys: [] }));
    const r = cli([
      'keys',
      'add',
      '--keys',
      keysFile,
      '--plan',
      'pro',
      '--label',
      'Acme',
      '--per-minute',
      '3',
      '--per-month',
      '777',
      '--meta',
      JSON.stringify(SECRET_META),
    ]);
    expect(r.status, r.stderr).toBe(0);
    key = r.stdout.trim();
    const s = await startServer({ publicDir: builtTree(), keysFile, port: 0, logger: createLogger('debug', logFile) });
    [server, base] = [s.server, s.url];
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it("answers with the key's own limits in the headers and /v1/usage, and 429 at its own per-minute limit", async () => {
    const first = await get();
    expect(first.status).toBe(200);
    expect(first.headers.get('ratelimit-limit')).toBe('3');
    expect(first.headers.get('x-ratelimit-requests-limit')).toBe('777');
    expect(first.headers.get('ratelimit-policy')).toMatch(/^"minute";q=3;w=60, "month";q=777;w=\d+$/);
    const usage = await get('/v1/usage');
    const body = await usage.text();
    expect(JSON.parse(body).data.limits).toEqual({ per_minute: 3, per_month: 777 });
    expect(body).not.toContain('c_secret_4711');
    const third = await get();
    expect(third.status).toBe(200);
    const refused = await get();
    expect(refused.status).toBe(429);
    const text = await refused.text();
    expect(JSON.parse(text).error.message).toContain("this key's 3 requests per minute");
    for (const t of [text, body, JSON.stringify([...refused.headers])]) expect(t).not.toMatch(/c_secret_4711|ops@customer/);
  });

  it('keys set reaches the running server within 2 s, and the counts stand', async () => {
    const set = cli(['keys', 'set', '--keys', keysFile, '--label', 'Acme', '--per-minute', '10', '--per-month', 'plan']);
    expect(set.status, set.stderr).toBe(0);
    expect(await until(async () => (await get()).headers.get('ratelimit-limit') === '10', 2_000 + LATE_MS)).toBe(true);
    const res = await get('/v1/usage');
    const data = JSON.parse(await res.text()).data;
    expect(data.limits).toEqual({ per_minute: 10, per_month: 50_000 });
    // Three data answers before the change and one or more after: the month's count was not reset.
    expect(data.month.used).toBeGreaterThanOrEqual(3);
    expect(data.minute.used).toBeGreaterThanOrEqual(5);
    expect(res.headers.get('x-ratelimit-requests-limit')).toBe('50000');
  });

  it('writes meta to no log line', async () => {
    // The logger flushes at least once a second.
    expect(await until(() => readFileSync(logFile, 'utf8').includes('"status":429'), 2_000 + LATE_MS)).toBe(true);
    expect(readFileSync(logFile, 'utf8')).not.toMatch(/c_secret_4711|ops@customer/);
  });
});
