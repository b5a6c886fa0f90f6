/** The invoicing recipe of docs/billing.md, run as written (decision 99) on a quota database holding last month. */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteQuotaStore } from '../../auth-shim/node/quota-sqlite.js';
import { monthName, monthOf, monthsAfter } from '../../auth-shim/quota.js';
import { BIN, tempDir } from '../helpers.js';
import { block } from './blocks.js';

const root = tempDir('rr-billing-recipe-');

describe('invoicing last month', () => {
  it('writes usage-<last month>.csv with each key of the key file and its requests', async () => {
    const start = monthsAfter(monthOf(Date.now()).start, -1);
    const last = { start, end: monthsAfter(start, 1) };
    const keys = join(root, 'keys.json');
    const sha = createHash('sha256').update('rr_billing_recipe_key').digest('hex');
    writeFileSync(keys, JSON.stringify({ keys: [{ sha256: sha, plan: 'pro', label: 'Acme' }] }));
    const db = join(root, 'quotas.sqlite');
    const store = await SqliteQuotaStore.open(db);
    for (let i = 0; i < 7; i++) store.take(`key:${sha}`, { perMinute: 100, perMonth: 100 }, start + 86_400_000 + i * 1_000, last);
    await store.close();
    const script = block('billing.md', 'sh', '.risk-readings-quotas.sqlite')
      .replace('npx risk-readings', `'${process.execPath}' '${BIN}'`)
      .replace('/srv/risk-readings/.risk-readings-quotas.sqlite', db)
      .replace('/etc/risk-readings/keys.json', keys);
    const r = spawnSync('bash', ['-e', '-c', script], { cwd: root, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(readFileSync(join(root, `usage-${monthName(start)}.csv`), 'utf8')).toBe(
      // The key's terms in effect follow the count (decision 106): the pro plan's, no metadata.
      `credential,label,plan,month,requests,revoked,per_minute,per_month,meta\nkey:${sha.slice(0, 8)},Acme,pro,${monthName(start)},7,,20,50000,\n`,
    );
  });
});
