/**
 * The key store under concurrent commands, as operators and scripts run them: each `keys` command holds the file's
 * lock from its read to its write, so every key printed is stored and a revoked key stays revoked.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliAsync, tempDir } from '../helpers.js';

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
