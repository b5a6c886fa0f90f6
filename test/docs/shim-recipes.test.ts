/**
 * docs/shim.md's way back from a damaged quota database, run as written (decision 99): a copy made with `sqlite3`'s
 * `.backup` while the store has the database open, made private, then put back after a crash and damage, the damaged
 * files moved aside first; `serve` and `usage` take it and count on from what it held.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, renameSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { QuotaStoreDamaged, SqliteQuotaStore } from '../../auth-shim/node/quota-sqlite.js';
import { monthTotals } from '../../auth-shim/node/quota-totals.js';
import { monthOf } from '../../auth-shim/quota.js';
import { tempDir } from '../helpers.js';
import { inline } from './blocks.js';

const SQLITE3 = 'sqlite3';
const noSqlite = spawnSync(SQLITE3, ['-version']).status === 0 ? null : `${SQLITE3} is not on PATH`;
if (noSqlite && process.env.CI === 'true') throw new Error(`CI=true and ${noSqlite} (apt-get install sqlite3): the copy recipe cannot run`);

/** The command docs/shim.md quotes as `<start>…`, as words, its double-quoted argument whole, FILE and COPY in place. */
const recipe = (start: string, file: string, copy: string): string[] =>
  [...inline('shim.md', start).matchAll(/"([^"]*)"|(\S+)/g)].map((m) => (m[1] ?? m[2]!).replace('FILE', file).replace('COPY', copy));
const root = tempDir('rr-shim-recipes-');

describe.skipIf(noSqlite !== null)(`a copy of a running quota database (skipped: ${noSqlite ?? 'no'})`, () => {
  it('is made beside the running store, private once chmod ran, and restores the counts it held after damage', async () => {
    const [file, copy] = [join(root, 'quotas.sqlite'), join(root, 'quotas.copy')];
    const month = monthOf(Date.now());
    const limits = { perMinute: 100, perMonth: 1_000 };
    const store = await SqliteQuotaStore.open(file);
    for (let i = 0; i < 5; i++) expect(store.take('key:a', limits, Date.now(), month).ok).toBe(true);
    await store.flush(); // saved, as each second while serve runs

    const [backup, ...args] = recipe('sqlite3 FILE', file, copy);
    const made = spawnSync(backup!, args, { encoding: 'utf8' });
    expect(made.status, made.stderr).toBe(0);
    const [chmod, ...modeArgs] = recipe('chmod 600 COPY', file, copy);
    expect(spawnSync(chmod!, modeArgs).status).toBe(0);
    expect(statSync(copy).mode & 0o777).toBe(0o600);

    store.take('key:a', limits, Date.now(), month); // after the copy: not in it
    await store.flush();
    // A kill -9 then (its -wal beside the file), and the file lost: the witness says it held counts.
    const crashed = join(root, 'crashed.sqlite');
    for (const end of ['-wal', '.id']) copyFileSync(`${file}${end}`, `${crashed}${end}`);
    await store.close();
    await expect(monthTotals(crashed, month)).rejects.toThrow(QuotaStoreDamaged);

    // "move the damaged database's files aside, FILE and those of FILE-wal, FILE-shm and FILE.id that are there"
    mkdirSync(join(root, 'aside'));
    for (const end of ['', '-wal', '-shm', '.id'])
      if (existsSync(`${crashed}${end}`)) renameSync(`${crashed}${end}`, join(root, 'aside', `crashed.sqlite${end}`));
    const [cp, ...cpArgs] = recipe('cp COPY FILE', crashed, copy);
    expect(spawnSync(cp!, cpArgs).status).toBe(0);
    expect((await monthTotals(crashed, month)).get('key:a')).toBe(5);
    // Its witness alone left in place: refused, as a copy older than the last save.
    copyFileSync(join(root, 'aside', 'crashed.sqlite.id'), `${crashed}.id`);
    await expect(monthTotals(crashed, month)).rejects.toThrow(/its charges end at row \d+, where .* says row \d+ was saved/);
    renameSync(`${crashed}.id`, join(root, 'aside', 'crashed.sqlite.id'));
    const again = await SqliteQuotaStore.open(crashed);
    expect(again.take('key:a', limits, Date.now(), month).monthUsed).toBe(6);
    await again.close();
  });
});
