/**
 * `preview` serves the API's files and nothing else of the folder: not the quota counts (every key's hash and
 * usage), the parse cache, the kept trees or a listing of the folder; a path that does not decode is a 400.
 */
import { writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { preview } from '../../generator/preview.js';
import { buildSmall, smallSite, tempDir } from '../helpers.js';

const root = tempDir('rr-preview-');
const out = join(root, 'public');
let server: Server;
let base: string;

beforeAll(async () => {
  const pages = join(root, 'site');
  await smallSite(pages, 1, '2025-06-01', ['BTC', 'SPY']);
  await buildSmall(pages, out);
  writeFileSync(join(out, '.risk-readings-quotas.json'), '{"secret":"every key hash"}');
  server = await preview(out, 0);
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const status = async (path: string) => (await fetch(base + path)).status;

describe('preview', () => {
  it('serves the tree under /v1/, files and folder listings', async () => {
    const health = await fetch(`${base}/v1/health.json`);
    expect(health.status).toBe(200);
    expect(((await health.json()) as { status: string }).status).toBeDefined();
    expect(await status('/v1/assets/BTC/risk.json')).toBe(200);
    expect(await status('/v1/assets/')).toBe(200);
  });

  it('serves nothing else of the folder', async () => {
    for (const path of [
      '/',
      '/.risk-readings-quotas.json',
      '/.risk-readings-cache.json',
      '/.trees/',
      '/.lock',
      '/v1/../.risk-readings-quotas.json',
      '/v1/%2e%2e/.risk-readings-quotas.json',
    ])
      expect(await status(path), path).toBe(404);
  });

  it('answers 400, not 500, to a path that does not decode or holds a NUL', async () => {
    expect(await status('/%00')).toBe(400);
    expect(await status('/v1/%E0%A4%A')).toBe(400);
  });
});
