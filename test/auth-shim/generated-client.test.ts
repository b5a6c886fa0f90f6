/**
 * A client nobody here wrote: openapi-typescript generates types from the document the gateway serves, a script
 * calls all nine endpoints through openapi-fetch, TypeScript compiles it strictly, and it runs against a served
 * tree. A field the document types wrongly, or leaves out, breaks the compile or the run.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { join } from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer } from '../../auth-shim/node/server.js';
import { ROOT, tempDir } from '../helpers.js';
import { KEY, KEYS_FILE, builtTree } from './tree.js';

const root = tempDir('rr-client-');
let server: Server;
let base = '';

beforeAll(async () => {
  const s = await startServer({ publicDir: builtTree(), keysFile: KEYS_FILE, port: 0, watchMs: 0 });
  [server, base] = [s.server, s.url];
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

/** The script a customer would write, against the generated `paths`; it prints each operation's status. */
const CLIENT = `import createClient from 'openapi-fetch';
import type { paths } from './schema.js';

const [baseUrl, key] = process.argv.slice(2) as [string, string];
const client = createClient<paths>({ baseUrl, headers: { 'X-API-Key': key } });
const status: Record<string, number> = {};

const assets = await client.GET('/v1/assets');
status.listAssets = assets.response.status;
const symbol: string = assets.data!.data.assets[0]!.symbol;

const risk = await client.GET('/v1/assets/{symbol}/risk', { params: { path: { symbol } } });
status.getAssetRisk = risk.response.status;
const score: number | undefined = risk.data?.data.gravity?.score;
const stale: string[] | undefined = risk.data?.data.stale_models;

const history = await client.GET('/v1/assets/{symbol}/history', { params: { path: { symbol }, query: { limit: 3 } } });
status.getAssetHistory = history.response.status;
const cursor: string | null | undefined = history.data?.data.next_cursor;
const firstDate: string | undefined = history.data?.data.rows[0]?.date;

const bulk = await client.GET('/v1/bulk/risk', { params: { query: { symbols: 'BTC, ETH' } } });
status.getBulkRisk = bulk.response.status;
const missing: string[] | undefined = bulk.data?.data.missing;

const changes = await client.GET('/v1/changes', { params: { query: { limit: 5 } } });
status.getChanges = changes.response.status;
const moved: string | undefined = changes.data?.data.events[0]?.field;
const feedCursor: string | null | undefined = changes.data?.data.next_cursor;

const summary = await client.GET('/v1/market/{universe}/summary', { params: { path: { universe: 'crypto' } } });
status.getUniverseSummary = summary.response.status;

const signal = await client.GET('/v1/signals/dca/{symbol}', { params: { path: { symbol: 'BTC' } } });
status.getDcaSignal = signal.response.status;
const multiplier: number | null | undefined = signal.data?.data.multiplier;

const health = await client.GET('/v1/health');
status.getHealth = health.response.status;
const openapi = await client.GET('/v1/openapi.json');
status.getOpenApi = openapi.response.status;

const refused = await createClient<paths>({ baseUrl }).GET('/v1/assets');
const code: string | undefined = refused.error?.error.code;

console.log(JSON.stringify({ status, seen: { symbol, score, stale, cursor, firstDate, missing, multiplier, code, moved, feedCursor } }));
`;

describe('a client generated from the served document', () => {
  it('compiles strictly and calls all nine endpoints against the gateway', async () => {
    const doc = await (await fetch(`${base}/v1/openapi.json`)).json();
    const dir = join(root, 'client');
    mkdirSync(dir, { recursive: true });
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
    writeFileSync(join(dir, 'schema.ts'), astToString(await openapiTS(doc)));
    writeFileSync(join(dir, 'client.ts'), CLIENT);
    writeFileSync(join(dir, 'package.json'), '{"type": "module"}');
    const options = {
      strict: true,
      noUncheckedIndexedAccess: true,
      target: 'es2022',
      module: 'nodenext',
      moduleResolution: 'nodenext',
      skipLibCheck: true,
    };
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { ...options, outDir: 'out' }, files: ['client.ts', 'schema.ts'] }),
    );
    const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir], { encoding: 'utf8' });
    expect(tsc.stdout + tsc.stderr, 'tsc').toBe('');
    // Not spawnSync: the gateway answering the client runs in this process, which must stay free to answer.
    const run = await new Promise<{ stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [join(dir, 'out', 'client.js'), base, KEY.ultra]);
      let [stdout, stderr] = ['', ''];
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.on('close', () => resolve({ stdout, stderr }));
    });
    expect(run.stderr).toBe('');
    const { status, seen } = JSON.parse(run.stdout) as { status: Record<string, number>; seen: Record<string, unknown> };
    expect(Object.keys(status)).toHaveLength(9);
    for (const [op, s] of Object.entries(status)) expect(s, op).toBe(200);
    expect(seen).toMatchObject({
      symbol: expect.any(String),
      score: expect.any(Number),
      missing: [],
      multiplier: null,
      code: 'unauthorized',
      moved: expect.any(String),
      feedCursor: expect.any(String),
    });
  });
});
