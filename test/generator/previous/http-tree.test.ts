/**
 * The previous tree read from an origin that misbehaves: a body larger than the tree can hold (announced or
 * decompressed), a body that breaks off, an origin that drips or never answers, one slow on every file, a manifest
 * that lies about its sizes, a redirect to another host. Each ends soon, as the environment's failure naming the URL
 * and the cause, within a memory budget that does not come from the origin; a build meeting one exits 3 and leaves
 * no lock, and its token never reaches another host.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import fg from 'fast-glob';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EnvironmentError } from '../../../generator/exit.js';
import { fetchTree, type FetchLimits } from '../../../generator/previous/http-tree.js';
import { build } from '../../../generator/build.js';
import { buildSmall, cliAsync, LATE_MS, readJson, smallSite, tempDir } from '../../helpers.js';

const root = tempDir('rr-http-tree-');
const files = new Map<string, Buffer>();
/** How the origin answers a path, when not with the file as it is. */
const misbehave = new Map<string, (res: ServerResponse, file: Buffer | undefined, req: IncomingMessage) => void>();
/** Every path asked of the origin, in order. */
const requested: string[] = [];
let server: Server;
let origin: string;
/** Another origin (another port), recording the Authorization header of every request that reaches it. */
let elsewhere: Server;
let elsewhereUrl = '';
const reachedElsewhere: (string | undefined)[] = [];
/**
 * Time limits no test here meets but the one that tests it (which sets its own short): on a busy machine a slow answer
 * or a timer held back must not end a read by another limit than the one a test is about.
 */
const LIMITS: FetchLimits = { manifestBytes: 1 << 20, heldBytes: 64 << 20, idleMs: 60_000, fileMs: 60_000, totalMs: 60_000 };
const LEDGER = 'v1/assets/BTC/history/full.json';
/** 32 MB of zeros gzipped, made once: making it in the answer would keep the origin silent for as long. */
const GZIP_BOMB = gzipSync(Buffer.alloc(32 << 20));

beforeAll(async () => {
  const pages = join(root, 'site');
  await smallSite(pages, 1, '2025-06-01', ['BTC', 'SPY']);
  const out = join(root, 'out');
  await buildSmall(pages, out);
  for (const p of fg.sync('v1/**', { cwd: out, followSymbolicLinks: true })) files.set(`/${p}`, readFileSync(join(out, p)));
  server = createServer((req, res) => {
    requested.push(req.url!);
    const file = files.get(req.url!.replace(/\?.*/, ''));
    const odd = misbehave.get(req.url!);
    if (odd) return odd(res, file, req);
    if (!file) return res.writeHead(404).end();
    res.writeHead(200, { 'content-length': file.byteLength }).end(file);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  elsewhere = createServer((req, res) => {
    reachedElsewhere.push(req.headers.authorization);
    res.writeHead(200).end(files.get(req.url!));
  });
  await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
  elsewhereUrl = `http://127.0.0.1:${(elsewhere.address() as { port: number }).port}`;
});
afterAll(() => {
  for (const s of [server, elsewhere]) {
    s.closeAllConnections();
    s.close();
  }
});

/** The small tree's manifest with `edit` applied to its parsed form (sizes and hashes left to the edit). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const editedManifest = (edit: (m: any) => void): Buffer => {
  const m = JSON.parse(files.get('/v1/_manifest.json')!.toString());
  edit(m);
  return Buffer.from(JSON.stringify(m));
};
const ledgers = () => [...files.keys()].filter((p) => p.endsWith('/history/full.json'));

/** fetchTree's failure, with how long it took. */
async function failure(limits = LIMITS, token?: string): Promise<{ error: unknown; ms: number }> {
  const start = performance.now();
  const error = await fetchTree(origin, token, limits).then(
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
      (res: ServerResponse) => res.writeHead(200, { 'content-encoding': 'gzip' }).end(GZIP_BOMB),
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
  ])('%s: the environment, named, before any time limit', async (_, path, answer, message) => {
    misbehave.clear();
    misbehave.set(path, answer);
    const { error, ms } = await failure();
    expect(error).toBeInstanceOf(EnvironmentError);
    expect((error as Error).message).toMatch(new RegExp(`^${origin}/`));
    expect((error as Error).message).toMatch(message);
    expect(ms).toBeLessThan(LIMITS.idleMs);
  });

  it.each([
    [
      'a manifest dripped a byte at a time',
      '/v1/_manifest.json',
      (res: ServerResponse) => {
        res.writeHead(200);
        const drip = setInterval(() => (res.destroyed ? clearInterval(drip) : res.write(' ')), 100);
      },
      { fileMs: 2_500 },
      /v1\/_manifest\.json: the origin took more than 2\.5 s for one file/,
    ],
    [
      'an origin that never answers',
      '/v1/_manifest.json',
      () => {},
      { idleMs: 1_000 },
      /v1\/_manifest\.json: the origin sent nothing for 1 s/,
    ],
  ])('%s: the environment, named, at its limit', async (_, path, answer, limit, message) => {
    misbehave.clear();
    misbehave.set(path, answer);
    const { error, ms } = await failure({ ...LIMITS, ...limit });
    expect(error).toBeInstanceOf(EnvironmentError);
    expect((error as Error).message).toMatch(new RegExp(`^${origin}/`));
    expect((error as Error).message).toMatch(message);
    // Not before the limit; after it, no later than a busy machine can be.
    const ends = Object.values(limit)[0]!;
    expect(ms).toBeGreaterThanOrEqual(ends - 5);
    expect(ms).toBeLessThan(ends + LATE_MS);
  });

  it('a build continuing from such an origin exits 3 naming the URL, and leaves nothing behind', async () => {
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
    // Nothing left behind: no lock, nor the --out folder this build made.
    expect(existsSync(out)).toBe(false);
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

  it('a manifest declaring more than the budget for what a build reads: refused before any file is fetched', async () => {
    misbehave.clear();
    // Each ledger declared 4 GB, as a lying origin that would then stream that fast does.
    const lying = editedManifest((m) => {
      for (const p of Object.keys(m.files)) if (p.endsWith('/history/full.json')) m.files[p].size = 4 * 2 ** 30;
    });
    misbehave.set('/v1/_manifest.json', (res) => res.writeHead(200).end(lying));
    requested.length = 0;
    const { error } = await failure();
    expect(error).toBeInstanceOf(EnvironmentError);
    expect((error as Error).message).toMatch(
      new RegExp(
        `^${origin}/v1/_manifest\\.json: the manifest declares \\d+ bytes for the \\d+ files a build reads, more than the ${LIMITS.heldBytes} it holds in memory at most$`,
      ),
    );
    expect(requested).toEqual(['/v1/_manifest.json']);
  });

  it('an origin slow on every file but within its limits: the whole read has one deadline, named', async () => {
    misbehave.clear();
    // Each file sent in five parts 300 ms apart: within the idle and per-file limits, longer than the whole's.
    for (const [path, file] of files)
      if (path !== '/v1/_manifest.json')
        misbehave.set(path, (res) => {
          res.writeHead(200, { 'content-length': file.byteLength });
          const part = Math.ceil(file.byteLength / 5);
          let sent = 0;
          const drip = setInterval(() => {
            if (res.destroyed) return clearInterval(drip);
            res.write(file.subarray(sent, (sent += part)));
            if (sent < file.byteLength) return;
            clearInterval(drip);
            res.end();
          }, 300);
        });
    const limits = { ...LIMITS, totalMs: 1_000 };
    const { error, ms } = await failure(limits);
    expect(error).toBeInstanceOf(EnvironmentError);
    expect((error as Error).message).toBe(`${origin}/v1/: reading the previous tree took more than 1 s`);
    expect(ms).toBeGreaterThanOrEqual(limits.totalMs - 5);
    expect(ms).toBeLessThan(limits.totalMs + LATE_MS);
    misbehave.clear();
  });

  it('sends its token to its origin only: a redirect to another host is refused, named; one within the origin is followed', async () => {
    misbehave.clear();
    const TOKEN = 'previous-tree-token-for-tests';
    const ledger = ledgers()[0]!;
    misbehave.set(ledger, (res) => res.writeHead(302, { location: `${elsewhereUrl}${ledger}` }).end());
    const { error } = await failure(LIMITS, TOKEN);
    expect(error).toBeInstanceOf(EnvironmentError);
    expect((error as Error).message).toBe(
      `${origin}${ledger}: the origin redirected to another origin (${elsewhereUrl}), which is not followed: its token is for ${origin} only; configure the URL that serves the tree itself`,
    );
    expect(reachedElsewhere).toEqual([]);
    // Within the origin, the token goes along (the origin answers the moved file only with it).
    misbehave.set(ledger, (res) => res.writeHead(301, { location: `${ledger}?moved` }).end());
    misbehave.set(`${ledger}?moved`, (res, file, req) =>
      req.headers.authorization === `Bearer ${TOKEN}` ? res.writeHead(200).end(file) : res.writeHead(401).end(),
    );
    const tree = (await fetchTree(origin, TOKEN, LIMITS))!;
    expect((await tree.ledger(ledger.split('/')[3]!))!.length).toBeGreaterThan(0);
    expect(reachedElsewhere).toEqual([]);
    misbehave.clear();
  });

  it('a build against a manifest that lies about its sizes stays within its memory budget and exits 3, named', async () => {
    const rss = join(root, 'max-rss.mjs');
    writeFileSync(rss, "process.on('exit', () => process.stderr.write(`max-rss-kb ${process.resourceUsage().maxRSS}\\n`));\n");
    const build = async (out: string) => {
      const r = await cliAsync(
        [
          'build',
          '--pages',
          join(root, 'site'),
          '--out',
          join(root, out),
          '--previous',
          origin,
          '--catalog',
          join(root, 'site', 'catalog.json'),
        ],
        { NODE_OPTIONS: `--import ${rss}` },
      );
      return { ...r, rssMb: Number(/max-rss-kb (\d+)/.exec(r.stderr)![1]) / 1024 };
    };
    // An origin that streams zeros as fast as it can for any ledger, as long as it is asked to.
    for (const p of ledgers())
      misbehave.set(p, (res) => {
        res.writeHead(200);
        const chunk = Buffer.alloc(1 << 20);
        const pump = () => {
          while (!res.destroyed && res.write(chunk));
          if (!res.destroyed) res.once('drain', pump);
        };
        pump();
      });
    // Each ledger declared 4 GB: refused from the manifest alone.
    const huge = editedManifest((m) => {
      for (const p of Object.keys(m.files)) if (p.endsWith('/history/full.json')) m.files[p].size = 4 * 2 ** 30;
    });
    misbehave.set('/v1/_manifest.json', (res) => res.writeHead(200).end(huge));
    const refused = await build('lying-huge');
    expect(refused.status, refused.stderr).toBe(3);
    expect(refused.stderr).toMatch(`${origin}/v1/_manifest.json: the manifest declares`);
    // The ledgers declared as large as the budget allows between them: each read to its declared size, and no
    // further. What was held never passed the budget.
    const within = editedManifest((m) => {
      const n = ledgers().length;
      for (const p of Object.keys(m.files)) if (p.endsWith('/history/full.json')) m.files[p].size = Math.floor((128 << 20) / n) - 65_536;
    });
    misbehave.set('/v1/_manifest.json', (res) => res.writeHead(200).end(within));
    const read = await build('lying-within');
    expect(read.status, read.stderr).toBe(3);
    expect(read.stderr).toMatch(/history\/full\.json: the body runs past \d+ bytes, more than the tree has/);
    expect(refused.rssMb, 'peak RSS (MB), refused from the manifest').toBeLessThan(1024);
    expect(read.rssMb, 'peak RSS (MB), read to the budget').toBeLessThan(1024);
    misbehave.clear();
  });
});
