/**
 * The key store as operators and scripts use it. Under concurrent commands: each `keys` command holds the file's
 * lock from its read to its write, so every key printed is stored and a revoked key stays revoked. Over time
 * (decision 37): keys that expire, a label rolled over to a new key with an overlap, and each key's state.
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { addKey, EXPIRING_WITHIN_MS, listKeys, rollKeys } from '../../generator/keys.js';
import { cli, cliAsync, tempDir } from '../helpers.js';

const root = tempDir('rr-keys-');
const stored = (file: string) => (JSON.parse(readFileSync(file, 'utf8')) as { keys: { label: string }[] }).keys.map((k) => k.label);

describe('keys commands at once', () => {
  it('twenty concurrent adds: all exit 0 and all twenty keys are stored', async () => {
    const file = join(root, 'twenty.json');
    const runs = await Promise.all(
      Array.from({ length: 20 }, (_, i) => cliAsync(['keys', 'add', '--plan', 'pro', '--keys', file, '--label', `k${i}`])),
    );
    for (const r of runs) expect(r.status, r.stderr).toBe(0);
    expect(new Set(runs.map((r) => r.stdout.trim())).size).toBe(20);
    expect(stored(file).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `k${i}`).sort());
  });

  it('a revoke racing adds: the revoked key stays revoked and every added key is kept', async () => {
    const file = join(root, 'race.json');
    for (let trial = 0; trial < 10; trial++) {
      const victim = `victim${trial}`;
      expect((await cliAsync(['keys', 'add', '--plan', 'basic', '--keys', file, '--label', victim])).status).toBe(0);
      const added = ['a', 'b', 'c'].map((x) => `added${trial}${x}`);
      const runs = await Promise.all([
        ...added.map((label) => cliAsync(['keys', 'add', '--plan', 'ultra', '--keys', file, '--label', label])),
        cliAsync(['keys', 'revoke', '--keys', file, '--label', victim]),
      ]);
      for (const r of runs) expect(r.status, r.stderr).toBe(0);
      const labels = stored(file);
      expect(labels).not.toContain(victim);
      expect(labels).toEqual(expect.arrayContaining(added));
    }
  });
});

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const hashOf = (key: string) => createHash('sha256').update(key).digest('hex');
type Stored = { sha256: string; plan: string; label: string; created?: string; expires?: string };
const records = (file: string) => (JSON.parse(readFileSync(file, 'utf8')) as { keys: Stored[] }).keys;

describe('keys over time (decision 37)', () => {
  const T = new Date(Date.UTC(2026, 10, 2, 9, 30, 0));
  const at = (ms: number) => new Date(T.getTime() + ms);

  it('a key is active, then expiring in its last week, then expired from its expiry on', async () => {
    const file = join(root, 'states.json');
    await addKey(file, 'basic', 'trial', T, T.getTime() + 14 * DAY);
    await addKey(file, 'pro', 'forever', T);
    const states = (now: Date) => listKeys(file, now).map((k) => [k.label, k.state]);
    expect(listKeys(file, T)[0]).toMatchObject({ expires: '2026-11-16T09:30:00Z', created: '2026-11-02T09:30:00Z', state: 'active' });
    expect(states(at(14 * DAY - EXPIRING_WITHIN_MS - 1))).toEqual([
      ['trial', 'active'],
      ['forever', 'active'],
    ]);
    expect(states(at(14 * DAY - EXPIRING_WITHIN_MS))).toEqual([
      ['trial', 'expiring'],
      ['forever', 'active'],
    ]);
    expect(states(at(14 * DAY - 1))).toEqual([
      ['trial', 'expiring'],
      ['forever', 'active'],
    ]);
    expect(states(at(14 * DAY))).toEqual([
      ['trial', 'expired'],
      ['forever', 'active'],
    ]);
  });

  it("roll: a new key with the label's plan; the old one ends when the overlap does; a second roll ends both", async () => {
    const file = join(root, 'roll.json');
    const old = await addKey(file, 'ultra', 'Acme', T);
    await addKey(file, 'basic', 'Other', T);
    const first = await rollKeys(file, 'Acme', 24 * HOUR, at(HOUR));
    expect(first.key).toMatch(/^rr_[A-Za-z0-9_-]{32}$/);
    expect(first.key).not.toBe(old);
    expect(first.added).toMatchObject({ plan: 'ultra', label: 'Acme', expires: null, state: 'active' });
    expect(first.ending).toEqual([
      expect.objectContaining({ sha256_prefix: hashOf(old).slice(0, 8), expires: '2026-11-03T10:30:00Z', state: 'expiring' }),
    ]);
    expect(records(file).map((k) => [k.sha256, k.label, k.expires])).toEqual([
      [hashOf(old), 'Acme', '2026-11-03T10:30:00Z'],
      [expect.any(String), 'Other', undefined],
      [hashOf(first.key), 'Acme', undefined],
    ]);
    // Within the overlap the label holds two valid keys: a roll replaces both, and the older keeps its sooner end.
    const second = await rollKeys(file, 'Acme', 48 * HOUR, at(2 * HOUR));
    expect(second.ending.map((k) => [k.sha256_prefix, k.expires])).toEqual([
      [hashOf(old).slice(0, 8), '2026-11-03T10:30:00Z'],
      [hashOf(first.key).slice(0, 8), '2026-11-04T11:30:00Z'],
    ]);
    expect(
      listKeys(file, at(2 * HOUR))
        .filter((k) => k.label === 'Acme')
        .map((k) => k.state),
    ).toEqual(['expiring', 'expiring', 'active']);
  });

  it("roll: a trial's new key ends when the trial would have; a lapsed label is renewed; --overlap +0h ends the old key at once", async () => {
    const file = join(root, 'trial.json');
    await addKey(file, 'basic', 'Trial', T, T.getTime() + 10 * DAY);
    const rolled = await rollKeys(file, 'Trial', 0, at(DAY));
    expect(rolled.added.expires).toBe('2026-11-12T09:30:00Z');
    expect(rolled.ending[0]).toMatchObject({ expires: '2026-11-03T09:30:00Z', state: 'expired' });
    // Past the trial's end no key of the label is valid: a roll renews it only on the operator's terms, never as a
    // key that does not end (decision 88); the file is unchanged by the refusal.
    const before = readFileSync(file, 'utf8');
    await expect(rollKeys(file, 'Trial', 24 * HOUR, at(20 * DAY))).rejects.toThrow(
      `${file}: every key labelled "Trial" has ended (the last at 2026-11-12T09:30:00Z), and a roll does not make a key that ended ` +
        "into one that never does: give --expires for the new key's end (+14d for another trial), or issue a key without an end " +
        'with keys add --plan basic --label "Trial"',
    );
    expect(readFileSync(file, 'utf8')).toBe(before);
    const renewed = await rollKeys(file, 'Trial', 24 * HOUR, at(20 * DAY), T.getTime() + 50 * DAY);
    expect([renewed.ending, renewed.added.plan, renewed.added.expires]).toEqual([[], 'basic', '2026-12-22T09:30:00Z']);
  });

  it('roll refuses a label nobody has, and a label whose keys hold two plans, naming the file; the file is unchanged', async () => {
    const file = join(root, 'mixed.json');
    await addKey(file, 'basic', 'Mixed', T);
    await addKey(file, 'pro', 'Mixed', T);
    const before = readFileSync(file, 'utf8');
    await expect(rollKeys(file, 'Nobody', HOUR, T)).rejects.toThrow(`${file}: no key is labelled "Nobody"`);
    await expect(rollKeys(file, 'Mixed', HOUR, T)).rejects.toThrow(`${file}: the keys labelled "Mixed" hold plans basic and pro`);
    expect(readFileSync(file, 'utf8')).toBe(before);
  });
});

describe('keys over time, as an operator runs them (compiled CLI)', () => {
  it('add --expires, roll, list and revoke: the key alone on stdout, each state shown, every mistake named', () => {
    const file = join(root, 'operator.json');
    const acme = cli(['keys', 'add', '--keys', file, '--plan', 'pro', '--label', 'Acme Corp']);
    const trial = cli(['keys', 'add', '--keys', file, '--plan', 'basic', '--label', 'Trial', '--expires', '+3d']);
    const until = cli(['keys', 'add', '--keys', file, '--plan', 'basic', '--label', 'Until', '--expires', '2099-06-30T00:00:00+02:00']);
    for (const r of [acme, trial, until]) expect([r.status, r.stderr]).toEqual([0, '']);
    const stored = records(file);
    const inThreeDays = Date.parse(stored[1]!.expires!) - Date.now();
    expect(inThreeDays).toBeGreaterThan(3 * DAY - 60_000);
    expect(inThreeDays).toBeLessThanOrEqual(3 * DAY);
    expect(stored[2]!.expires).toBe('2099-06-29T22:00:00Z');

    const rolled = cli(['keys', 'roll', '--keys', file, '--label', 'Acme Corp', '--overlap', '+48h']);
    expect(rolled.status, rolled.stderr).toBe(0);
    expect(rolled.stdout).toMatch(/^rr_[A-Za-z0-9_-]{32}\n$/);
    const oldPrefix = hashOf(acme.stdout.trim()).slice(0, 8);
    const newPrefix = hashOf(rolled.stdout.trim()).slice(0, 8);
    expect(rolled.stderr).toMatch(
      new RegExp(
        `^new key ${newPrefix} \\(pro, "Acme Corp"\\)\nold key ${oldPrefix} \\(pro, "Acme Corp"\\) works until \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ\n$`,
      ),
    );

    const rows = JSON.parse(cli(['keys', 'list', '--keys', file, '--json']).stdout) as Record<string, unknown>[];
    expect(rows.map((r) => [r.label, r.plan, r.state])).toEqual([
      ['Acme Corp', 'pro', 'expiring'],
      ['Trial', 'basic', 'expiring'],
      ['Until', 'basic', 'active'],
      ['Acme Corp', 'pro', 'active'],
    ]);
    expect(Object.keys(rows[0]!)).toEqual([
      'label',
      'plan',
      'sha256_prefix',
      'created',
      'expires',
      'state',
      'revoked',
      'per_minute',
      'per_month',
      'own_limits',
      'meta',
    ]);
    const table = cli(['keys', 'list', '--keys', file]).stdout.split('\n');
    expect(table[0]).toMatch(/^sha256 +plan +state +created +expires +per_minute +per_month +label +meta$/);
    expect(table[1]).toMatch(new RegExp(`^${oldPrefix}  pro    expiring  \\S+Z  \\S+Z  20 +50000 +Acme Corp$`));
    expect(table[4]).toMatch(new RegExp(`^${newPrefix}  pro    active    \\S+Z  - +20 +50000 +Acme Corp$`));
    for (const key of [acme, trial, until, rolled].map((r) => r.stdout.trim())) expect(table.join('\n')).not.toContain(key);

    // A key file written by hand with an expiry already past: listed as expired.
    const hand = join(root, 'by-hand.json');
    writeFileSync(hand, JSON.stringify({ keys: [{ sha256: 'a'.repeat(64), plan: 'pro', label: 'old', expires: '2026-01-01T00:00:00Z' }] }));
    expect(JSON.parse(cli(['keys', 'list', '--keys', hand, '--json']).stdout)[0]).toMatchObject({ state: 'expired', created: null });
    // Its label rolled: a lapsed trial needs --expires (exit 1, saying what to give), then it is renewed until then.
    const lapsed = cli(['keys', 'roll', '--keys', hand, '--label', 'old']);
    expect([lapsed.status, lapsed.stdout]).toEqual([1, '']);
    expect(lapsed.stderr).toContain('every key labelled "old" has ended (the last at 2026-01-01T00:00:00Z)');
    expect(lapsed.stderr).toContain(
      'give --expires for the new key\'s end (+14d for another trial), or issue a key without an end with keys add --plan pro --label "old"',
    );
    const renewed = cli(['keys', 'roll', '--keys', hand, '--label', 'old', '--expires', '+14d']);
    expect(renewed.status, renewed.stderr).toBe(0);
    expect(renewed.stderr).toMatch(/no key labelled "old" was still valid: the new key renews it until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n$/);

    const both = cli(['keys', 'revoke', '--keys', file, '--label', 'Acme Corp']);
    expect(both.stdout.split('\n').filter(Boolean)).toEqual([`revoked ${oldPrefix} pro Acme Corp`, `revoked ${newPrefix} pro Acme Corp`]);
    // Gone from the keys in force; kept for billing (decision 87), and listed with --revoked, after the others.
    expect(records(file).map((k) => k.label)).toEqual(['Trial', 'Until']);
    const all = JSON.parse(cli(['keys', 'list', '--keys', file, '--revoked', '--json']).stdout) as Record<string, unknown>[];
    expect(all.map((r) => [r.label, r.state, r.sha256_prefix])).toEqual([
      ['Trial', 'expiring', expect.any(String)],
      ['Until', 'active', expect.any(String)],
      ['Acme Corp', 'revoked', oldPrefix],
      ['Acme Corp', 'revoked', newPrefix],
    ]);
    expect(all[2]!.revoked).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(all[0]!.revoked).toBeNull();
    const withRevoked = cli(['keys', 'list', '--keys', file, '--revoked']).stdout.split('\n');
    expect(withRevoked[0]).toMatch(/^sha256 +plan +state +created +expires +revoked +per_minute +per_month +label +meta$/);
    expect(withRevoked[3]).toMatch(new RegExp(`^${oldPrefix}  pro    revoked   \\S+Z  \\S+Z  \\S+Z  20 +50000 +Acme Corp$`));

    const mistakes: [string[], number, string][] = [
      [['add', '--plan', 'pro', '--expires', '2020-01-01T00:00:00Z'], 2, '--expires 2020-01-01T00:00:00Z has already passed'],
      [
        ['add', '--plan', 'pro', '--expires', '30d'],
        2,
        '--expires takes an ISO 8601 instant such as 2026-12-31T00:00:00Z, or +N hours or days',
      ],
      [['add', '--plan', 'pro', '--expires', '2026-12-31T00:00'], 2, '--expires takes an ISO 8601 instant'],
      [
        ['roll', '--label', 'Trial', '--overlap', '24h'],
        2,
        '--overlap takes +N hours or days such as +24h or +7d (+0h: at once), not "24h"',
      ],
      [['roll'], 2, "required option '--label <l>' not specified"],
      // A malformed value of any keys option is usage (exit 2), named, before the file is read.
      [['revoke', '--sha256', 'b5ae'], 2, `--sha256 takes 8 to 64 hex digits of a key's hash, as keys list shows them, not "b5ae"`],
      [['revoke', '--sha256', 'zzzzzzzz'], 2, `--sha256 takes 8 to 64 hex digits of a key's hash, as keys list shows them, not "zzzzzzzz"`],
      [['revoke', '--sha256', ''], 2, `--sha256 takes 8 to 64 hex digits`],
      [['add', '--plan', 'pro', '--expires', '+99999999d'], 2, '--expires +99999999d would end after the year 9999; give a shorter span'],
      [['roll', '--label', 'Trial', '--expires', '+99999999d'], 2, '--expires +99999999d would end after the year 9999'],
      [['roll', '--label', 'Trial', '--overlap', '+99999999d'], 2, '--overlap +99999999d would end after the year 9999'],
      [['add', '--plan', 'PRO'], 2, '--plan is basic, pro or ultra'],
      [['revoke', '--sha256', '0123abcd'], 1, `risk-readings keys: ${file}: no key has a hash starting 0123abcd`],
      [['roll', '--label', 'Nobody'], 1, `risk-readings keys: ${file}: no key is labelled "Nobody"`],
    ];
    for (const [args, status, message] of mistakes) {
      const r = cli(['keys', ...args, '--keys', file]);
      expect([r.status, r.stdout], args.join(' ')).toEqual([status, '']);
      expect(r.stderr, args.join(' ')).toContain(message);
      expect(r.stderr).not.toMatch(/TypeError|\n\s+at /);
    }
  });
});
