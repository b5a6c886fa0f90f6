/**
 * The previous tree read from an origin that misbehaves: a body larger than the tree can hold (announced or
 * decompressed), a body that breaks off, an origin that drips or never answers. Each ends soon, as the environment's
 * failure naming the URL and the cause; a build meeting one exits 3 and leaves no lock.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import fg from 'fast-glob';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EnvironmentError } from '../../../generator/exit.js';
import { fetchTree, type FetchLimits } from '../../../generator/previous/http-tree.js';
import { build } from '../../../generator/build.js';
import { buildSmall, cliAsync, readJson, smallSite, tempDir } from '../../helpers.js';

const root = tempDir('rr-http-tree-');
const files = new Map<string, Buffer>();
/** How the origin answers a path, when not with the file as it is. */
const misbehave = new Map<string, (res: ServerResponse, file: Buffer | undefined) => void>();
let server: Server;
let origin: string;
// The idle limit is well above the drip's 100 ms: a loaded machine can hold a timer back a few hundred ms.
const LIMITS: FetchLimits = { manifestBytes: 1 << 20, idleMs: 1_000, fileMs: 2_500 };
const LEDGER = 'v1/assets/BTC/history/full.json';

beforeAll(async () => {
  const pages = join(root, 'site');
  await smallSite(pages, 1, '2025-06-01', ['BTC', 'SPY']);
  const out = join(root, 'out');
  await buildSmall(pages, out);
  for (const p of fg.sync('v1/**', { cwd: out, followSymbolicLinks: true })) files.set(`/${p}`, readFileSync(join(out, p)));
  server = createServer((req, res) => {
    const file = files.get(req.url!);
    const odd = misbehave.get(req.url!);
    if (odd) return odd(res, file);
    if (!file) return res.writeHead(404).end();
    res.writeHead(200, { 'content-length': file.byteLength }).end(file);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

/** fetchTree's failure, with how long it took. */
async function failure(): Promise<{ error: unknown; ms: number }> {
  const start = performance.now();
  const error = await fetchTree(origin, undefined, LIMITS).then(
    () => null,
    (e: unknown) => e,
  );
  return { error, ms: performance.now() - start };
}

describe('fetchTree against an origin', () => {
  it('reads a well-behaved tree, its ledgers checked against the manifest', async () => {
    misbehave.clear();
    const tree = (await fetchTree(origin, undefined, LIMITS))!;
    expect((await tree.ledger('BTC'))!.length).toBeGreaterThan(0);
  });

  it.each([
    [
      'a manifest announcing 2 GB',
      '/v1/_manifest.json',
      (res: ServerResponse) => {
        res.writeHead(200, { 'content-length': 2 ** 31 });
        res.write(Buffer.alloc(1024));
      },
      /v1\/_manifest\.json: the origin announced 2147483648 bytes/,
    ],
    [
      'a ledger that decompresses past its size (a gzip bomb)',
      `/${LEDGER}`,
      (res: ServerResponse) => res.writeHead(200, { 'content-encoding': 'gzip' }).end(gzipSync(Buffer.alloc(32 << 20))),
      /history\/full\.json: the body runs past \d+ bytes/,
    ],
    [
      'a ledger that breaks off',
      `/${LEDGER}`,
      (res: ServerResponse, file: Buffer | undefined) => {
        res.writeHead(200, { 'content-length': file!.byteLength });
        res.write(file!.subarray(0, 100), () => res.destroy());
      },
      /history\/full\.json: the body broke off/,
    ],
    [
      'a manifest dripped a byte at a time',
      '/v1/_manifest.json',
      (res: ServerResponse) => {
        res.writeHead(200);
        const drip = setInterval(() => (res.destroyed ? clearInterval(drip) : res.write(' ')), 100);
      },
      /v1\/_manifest\.json: the origin took more than 2\.5 s for one file/,
    ],
    ['an origin that never answers', '/v1/_manifest.json', () => {}, /v1\/_manifest\.json: the origin sent nothing for 1 s/],
  ])('%s: the environment, named, within the limits', async (_, path, answer, message) => {
    misbehave.clear();
    misbehave.set(path, answer);
    const { error, ms } = await failure();
    expect(error).toBeInstanceOf(EnvironmentError);
    expect((error as Error).message).toMatch(new RegExp(`^${origin}/`));
    expect((error as Error).message).toMatch(message);
    expect(ms).toBeLessThan(LIMITS.fileMs + 1_000);
  });

  it('a build continuing from such an origin exits 3 naming the URL, and leaves no lock', async () => {
    misbehave.clear();
    misbehave.set('/v1/_manifest.json', (res) => {
      res.writeHead(200, { 'content-length': 2 ** 31 });
      res.write(Buffer.alloc(1024));
    });
    const out = join(root, 'continued');
    const r = await cliAsync([
      'build',
      '--pages',
      join(root, 'site'),
      '--out',
      out,
      '--previous',
      origin,
      '--catalog',
      join(root, 'site', 'catalog.json'),
    ]);
    expect(r.status, r.stderr).toBe(3);
    expect(r.stderr).toContain(`${origin}/v1/_manifest.json: the origin announced 2147483648 bytes`);
    expect(existsSync(join(out, '.lock'))).toBe(false);
  });

  it('a build continuing from a deployed tree carries its change feed on; a feed that fails the manifest is refused', async () => {
    misbehave.clear();
    const pages = join(root, 'site2');
    await smallSite(pages, 2, '2025-06-01', ['BTC', 'SPY']);
    const feed = readJson(join(root, 'out', 'v1', 'changes', 'ledger.json'));
    const next = (out: string) =>
      build({ pages, out: join(root, out), previous: origin, catalog: join(pages, 'catalog.json'), now: '2026-10-15T00:30:00Z' });
    await next('carried');
    const carried = readJson(join(root, 'carried', 'v1', 'changes', 'ledger.json'));
    expect(carried.started_at).toBe(feed.started_at);
    expect(carried.events.length).toBeGreaterThan(feed.events.length);
    expect(carried.events.every((e: { published_at: string }) => e.published_at === '2026-10-15T00:30:00Z')).toBe(true);

    const edited = Buffer.from(files.get('/v1/changes/ledger.json')!.toString().replace(feed.started_at, '2026-10-01T00:30:00Z'));
    misbehave.set('/v1/changes/ledger.json', (res) => res.writeHead(200).end(edited));
    const refused = await next('refused').catch((e: Error & { exitCode?: number }) => e);
    expect((refused as Error).message).toMatch(/changes\/ledger\.json does not match _manifest\.json/);
    expect(existsSync(join(root, 'refused', 'v1'))).toBe(false);
  });
});
