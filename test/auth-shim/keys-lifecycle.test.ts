/**
 * Keys over time as they are served (decision 37): a key that was valid a moment ago is refused from its expiry on,
 * with no change to the key store and its verdict already kept, on the Node server and on the edge entry under
 * workerd alike; and a label rolled with `keys roll` (the compiled CLI, as an operator runs it) keeps the old key
 * working through the overlap while the running server picks up the new one, with no restart.
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer } from '../../auth-shim/node/server.js';
import { cli, LATE_MS, tempDir, until } from '../helpers.js';
import { startEdge, type Edge } from './edge-setup.js';
import { builtTree } from './tree.js';

const root = tempDir('rr-keys-served-');
const HOUR = 3_600_000;
const hashOf = (key: string) => createHash('sha256').update(key).digest('hex');
const TRIAL = 'rr_trial_key_for_the_expiry_tests';
const EXPIRES = '2026-11-02T12:00:00Z';
const END = Date.parse(EXPIRES);

/** The message of a 401 for a key that expired at `when` (never the key, never its label). */
const expiredMessage = (when: string) => `The credential sent in X-API-Key is not valid: the key expired at ${when}`;

async function expectExpired(res: Response, when: string): Promise<void> {
  expect(res.status).toBe(401);
  const text = await res.text();
  expect(JSON.parse(text).error).toEqual({ code: 'unauthorized', message: expiredMessage(when) });
  expect(text).not.toMatch(/rr_|Trial customer|[0-9a-f]{8}/);
}

describe('edge entry under workerd: a key expires on its clock, with no change to its key store', () => {
  let edge: Edge;
  beforeAll(async () => {
    const keys = { keys: [{ sha256: hashOf(TRIAL), plan: 'pro', label: 'Trial customer', expires: EXPIRES }] };
    edge = await startEdge({ entry: 'test/auth-shim/edge-clock-worker.ts', out: builtTree(), keys: JSON.stringify(keys) });
  });
  afterAll(() => edge?.close());

  it('answers the key until the millisecond before its expiry, then 401 saying when it expired', async () => {
    const at = (t: number) => edge.call('/v1/assets/BTC/risk', { headers: { 'X-API-Key': TRIAL, 'x-test-clock': String(t) } });
    expect((await at(END - HOUR)).status).toBe(200);
    // The key's verdict is kept now: only the clock moves.
    expect((await at(END - 1)).status).toBe(200);
    await expectExpired(await at(END), EXPIRES);
    await expectExpired(await at(END + 30 * 24 * HOUR), EXPIRES);
  });
});

describe('Node server: keys over time', () => {
  let server: Server;
  let base = '';
  let t = END - HOUR;
  const keysFile = join(root, 'keys.json');
  const get = (key: string) => fetch(`${base}/v1/assets/BTC/risk`, { headers: { 'X-API-Key': key } });

  beforeAll(async () => {
    const keys = { keys: [{ sha256: hashOf(TRIAL), plan: 'pro', label: 'Trial customer', expires: EXPIRES }] };
    writeFileSync(keysFile, JSON.stringify(keys));
    const s = await startServer({ publicDir: builtTree(), keysFile, port: 0, watchMs: 0, now: () => t });
    [server, base] = [s.server, s.url];
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('answers the key until the millisecond before its expiry, then 401 saying when it expired', async () => {
    t = END - HOUR;
    expect((await get(TRIAL)).status).toBe(200);
    t = END - 1;
    expect((await get(TRIAL)).status).toBe(200);
    t = END;
    await expectExpired(await get(TRIAL), EXPIRES);
  });

  it('keys roll: the new key works at once, the old one through the overlap and not after, with no restart', async () => {
    const issued = cli(['keys', 'add', '--keys', keysFile, '--plan', 'ultra', '--label', 'Acme']);
    expect(issued.status, issued.stderr).toBe(0);
    const old = issued.stdout.trim();
    t = Date.now();
    expect(await until(async () => (await get(old)).status === 200)).toBe(true);
    const rolled = cli(['keys', 'roll', '--keys', keysFile, '--label', 'Acme', '--overlap', '+2h']);
    expect(rolled.status, rolled.stderr).toBe(0);
    const fresh = rolled.stdout.trim();
    const ends = /works until (\S+)\n$/.exec(rolled.stderr)![1]!;
    // The running server reads the changed key file on its own (within 2 s, decision 22; later on a busy machine).
    expect(await until(async () => (await get(fresh)).status === 200, 2_000 + LATE_MS)).toBe(true);
    t = Date.parse(ends) - 1;
    expect([(await get(old)).status, (await get(fresh)).status]).toEqual([200, 200]);
    t = Date.parse(ends);
    await expectExpired(await get(old), ends);
    expect((await get(fresh)).status).toBe(200);
    expect(Date.parse(ends) - Date.now()).toBeGreaterThan(2 * HOUR - 60_000);
  });
});
