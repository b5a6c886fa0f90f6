/**
 * The edge under workerd as an operator configures it: ORIGIN_URL may name the folder holding `v1/` or `v1/`
 * itself, as `build --previous` takes it; a token the origin refuses is a 502 whose log line names the URL read
 * and says the origin refused the token, without the token.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../helpers.js';
import { ORIGIN_TOKEN, startEdge, type Edge } from './edge-setup.js';
import { KEY, KEYS_FILE, builtTree } from './tree.js';

const WRONG_TOKEN = 'a-token-the-origin-never-issued';
let atV1: Edge;
let wrongToken: Edge;
let wrongTokenLog = '';

beforeAll(async () => {
  const out = builtTree();
  const keys = readFileSync(KEYS_FILE, 'utf8');
  [atV1, wrongToken] = await Promise.all([
    startEdge({ out, keys, originPath: '/v1' }),
    startEdge({ out, keys, originPath: '/v1/', bindings: { ORIGIN_TOKEN: WRONG_TOKEN }, onStderr: (t) => (wrongTokenLog += t) }),
  ]);
});
afterAll(() => Promise.all([atV1?.close(), wrongToken?.close()]));

const risk = (edge: Edge) => edge.call('/v1/assets/BTC/risk', { headers: { 'X-API-Key': KEY.ultra } });

describe('the edge as an operator configures its origin', () => {
  it('reads the tree with ORIGIN_URL ending in /v1', async () => {
    expect((await risk(atV1)).status).toBe(200);
  });

  it('a token the origin refuses: 502, logged with the URL read and the cause, never the token', async () => {
    const res = await risk(wrongToken);
    expect(res.status).toBe(502);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('upstream_error');
    // ORIGIN_URL ended in /v1/: the manifest is read from v1/ once, not v1/v1/.
    const line = `shim: upstream: ${wrongToken.originUrl}v1/_manifest.json: the origin refused the token (401): ORIGIN_TOKEN is not one it accepts`;
    expect(await until(() => wrongTokenLog.includes(line))).toBe(true);
    expect(wrongTokenLog).not.toContain(WRONG_TOKEN);
    expect(wrongTokenLog).not.toContain(ORIGIN_TOKEN);
  });
});
