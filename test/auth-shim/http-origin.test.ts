/**
 * The edge's origin, read over HTTP from an origin that misbehaves: bytes that are not the manifest's are a 502
 * and are not kept (the right bytes are served once the origin recovers), and an origin that never answers is a
 * 502 within the deadline, not a hanging request. Its token goes to its origin only: a redirect to another origin
 * is a 502 (the other host never hears from it), one within the origin is followed.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHandler } from '../../auth-shim/handler.js';
import { HttpOrigin } from '../../auth-shim/http-origin.js';
import { OriginError } from '../../auth-shim/origin.js';
import { loadKeys } from '../../auth-shim/node/server.js';
import { LATE_MS } from '../helpers.js';
import { KEY, KEYS_FILE, builtTree } from './tree.js';

let server: Server;
let base = '';
/** Another origin (another port), recording the Authorization header of every request that reaches it. */
let elsewhere: Server;
let elsewhereUrl = '';
const reachedElsewhere: (string | undefined)[] = [];
const TOKEN = 'http-origin-token-for-tests';
let tree = '';
/** How the origin answers a path, when not with the file as it is. */
const misbehave = new Map<string, (res: ServerResponse) => void>();
const RISK = 'v1/assets/BTC/risk.json';
/** A deadline no test here meets but the one about it: a slow answer on a busy machine is not a failure of the origin. */
const TIMEOUT_MS = 60_000;

beforeAll(async () => {
  tree = builtTree();
  server = createServer((req, res) => {
    const path = req.url!.slice(1);
    const odd = misbehave.get(path);
    if (odd) return odd(res);
    let file: Buffer;
    try {
      file = readFileSync(join(tree, path));
    } catch {
      return res.writeHead(404).end();
    }
    res.writeHead(200).end(file);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;
  elsewhere = createServer((req, res) => {
    reachedElsewhere.push(req.headers.authorization);
    res.writeHead(200).end(readFileSync(join(tree, RISK)));
  });
  await new Promise<void>((r) => elsewhere.listen(0, '127.0.0.1', () => r()));
  elsewhereUrl = `http://127.0.0.1:${(elsewhere.address() as { port: number }).port}`;
});
afterAll(() => {
  for (const s of [server, elsewhere]) {
    s.closeAllConnections();
    s.close();
  }
});

describe('HttpOrigin', () => {
  it('serves a file only once its bytes are the manifest’s; garbage is an OriginError and is not kept', async () => {
    const origin = new HttpOrigin(base, { timeoutMs: TIMEOUT_MS });
    const size = readFileSync(join(tree, RISK)).byteLength;
    misbehave.set(RISK, (res) => res.writeHead(200).end(Buffer.alloc(size, 'x')));
    await expect(origin.get('assets/BTC/risk.json')).rejects.toThrow(
      new OriginError(`${base}${RISK}: the origin's bytes do not match the manifest (size or sha256)`),
    );
    // Longer than the manifest says: given up one chunk past its size, announced or not.
    misbehave.set(RISK, (res) => res.writeHead(200).end(Buffer.alloc(size + 1, 'x')));
    await expect(origin.get('assets/BTC/risk.json')).rejects.toThrow(
      new OriginError(`${base}${RISK}: the body runs past ${size} bytes, more than the tree has`),
    );
    misbehave.set(RISK, (res) => res.writeHead(200, { 'content-length': size + 1 }).end(Buffer.alloc(size + 1, 'x')));
    await expect(origin.get('assets/BTC/risk.json')).rejects.toThrow(
      new OriginError(`${base}${RISK}: the origin announced ${size + 1} bytes where the tree has ${size} at most`),
    );
    misbehave.set(`${RISK}.br`, (res) => res.writeHead(200).end('not brotli'));
    misbehave.delete(RISK);
    await expect(origin.get('assets/BTC/risk.json')).rejects.toThrow(`${base}${RISK}.br: the origin's bytes do not match the manifest`);
    misbehave.clear();
    const file = (await origin.get('assets/BTC/risk.json'))!;
    expect(Buffer.from(file.bytes)).toEqual(readFileSync(join(tree, RISK)));
  });

  it('gives up on an origin that never answers within its deadline', async () => {
    const origin = new HttpOrigin(base, { timeoutMs: 300 });
    misbehave.set('v1/_manifest.json', () => {});
    const start = performance.now();
    await expect(origin.get('assets/BTC/risk.json')).rejects.toThrow(
      new OriginError(`${base}v1/_manifest.json: the origin did not answer within 0.3 s`),
    );
    // Not before the deadline; after it, no later than a busy machine can be.
    expect(performance.now() - start).toBeGreaterThanOrEqual(300 - 5);
    expect(performance.now() - start).toBeLessThan(300 + LATE_MS);
    misbehave.clear();
  });

  it('reads the tree under the folder holding v1/ or under v1/ itself, as build --previous does', async () => {
    const bytes = readFileSync(join(tree, RISK));
    for (const url of [base, base.slice(0, -1), `${base}v1`, `${base}v1/`, `${base}v1/?via=cdn`])
      expect(Buffer.from((await new HttpOrigin(url).get('assets/BTC/risk.json'))!.bytes), url).toEqual(bytes);
  });

  it('names the URL it read in every failure, and which setting to check, never the token', async () => {
    const failure = (origin: HttpOrigin) =>
      origin.get('assets/BTC/risk.json').then(
        () => '',
        (e: Error) => e.message,
      );
    const messages: string[] = [];
    const expectFailure = async (origin: HttpOrigin, message: string) => {
      const got = await failure(origin);
      messages.push(got);
      expect(got).toBe(message);
    };
    // A folder that does not hold the tree.
    await expectFailure(
      new HttpOrigin(`${base}nope/`, { token: TOKEN }),
      `${base}nope/v1/_manifest.json: absent from the origin (404): ORIGIN_URL must be the URL under which the tree's v1/ is served`,
    );
    // The origin refusing the token it was sent, or a request without one.
    for (const status of [401, 403]) {
      misbehave.set('v1/_manifest.json', (res) => res.writeHead(status).end());
      await expectFailure(
        new HttpOrigin(base, { token: TOKEN }),
        `${base}v1/_manifest.json: the origin refused the token (${status}): ORIGIN_TOKEN is not one it accepts`,
      );
    }
    await expectFailure(
      new HttpOrigin(base),
      `${base}v1/_manifest.json: the origin refused the request (403): it wants a token, and ORIGIN_TOKEN is not set`,
    );
    misbehave.set('v1/_manifest.json', (res) => res.writeHead(500).end());
    await expectFailure(new HttpOrigin(base, { token: TOKEN }), `${base}v1/_manifest.json: the origin answered 500`);
    misbehave.clear();
    // A listed file the origin lacks.
    misbehave.set(RISK, (res) => res.writeHead(404).end());
    await expectFailure(new HttpOrigin(base, { token: TOKEN }), `${base}${RISK}: listed in the manifest but absent from the origin (404)`);
    misbehave.clear();
    // URLs that cannot be read at all, said without fetching and without echoing a secret in them.
    await expectFailure(new HttpOrigin('origin.example/v1'), 'ORIGIN_URL is not an absolute URL (https://host/path)');
    await expectFailure(
      new HttpOrigin('https://deploy:hunter2@origin.example/'),
      "ORIGIN_URL (https://origin.example) carries a user name or password, which is not sent: the origin's token is ORIGIN_TOKEN",
    );
    await expectFailure(
      new HttpOrigin('https://origin.invalid/'),
      "ORIGIN_URL is https://origin.invalid/, a placeholder: set it to the URL under which the tree's v1/ is served",
    );
    for (const m of messages) expect(m).not.toMatch(new RegExp(`${TOKEN}|hunter2`));
  });

  it('the shim answers 502 upstream_error for either, never garbage under the manifest’s ETag', async () => {
    const handle = createHandler({ origin: new HttpOrigin(base, { timeoutMs: TIMEOUT_MS }), keys: loadKeys(KEYS_FILE) });
    const get = () => handle(new Request('http://shim.test/v1/assets/BTC/risk', { headers: { 'X-API-Key': KEY.pro } }));
    misbehave.set(RISK, (res) => res.writeHead(200).end(Buffer.alloc(3196, 'x')));
    const res = await get();
    expect(res.status).toBe(502);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('upstream_error');
    misbehave.clear();
    expect((await get()).status).toBe(200);
  });

  it('sends its token to its own origin only: a redirect elsewhere is a 502 that names it; one within the origin is followed', async () => {
    const seen: (string | undefined)[] = [];
    const fetcher = (url: string, init: RequestInit) => {
      if (url.startsWith(base)) seen.push(new Headers(init.headers).get('authorization') ?? undefined);
      return fetch(url, init);
    };
    const handle = createHandler({ origin: new HttpOrigin(base, { token: TOKEN, fetcher }), keys: loadKeys(KEYS_FILE) });
    const get = () =>
      handle(new Request('http://shim.test/v1/assets/BTC/risk', { headers: { 'X-API-Key': KEY.pro, 'Accept-Encoding': 'identity' } }));
    for (const status of [301, 302, 303, 307, 308]) {
      misbehave.set(RISK, (res) => res.writeHead(status, { location: `${elsewhereUrl}/${RISK}` }).end());
      const res = await get();
      expect(res.status).toBe(502);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('upstream_error');
    }
    expect(reachedElsewhere).toEqual([]);
    expect(seen.every((h) => h === `Bearer ${TOKEN}`)).toBe(true);
    const origin = new HttpOrigin(base, { token: TOKEN });
    await expect(origin.get('assets/BTC/risk.json')).rejects.toThrow(
      `${base}${RISK}: the origin redirected to another origin (${elsewhereUrl}), which is not followed`,
    );
    expect(reachedElsewhere).toEqual([]);

    // Within the origin (a relative Location, as a host moving a folder sends): followed, with the token.
    misbehave.set(RISK, (res) => res.writeHead(302, { location: `/moved/${RISK}` }).end());
    misbehave.set(`moved/${RISK}`, (res) => res.writeHead(200).end(readFileSync(join(tree, RISK))));
    const moved = await get();
    expect(moved.status).toBe(200);
    expect(Buffer.from(await moved.arrayBuffer())).toEqual(readFileSync(join(tree, RISK)));
    // A loop within the origin ends after a few hops.
    misbehave.set(RISK, (res) => res.writeHead(302, { location: `/${RISK}` }).end());
    await expect(new HttpOrigin(base, { token: TOKEN }).get('assets/BTC/risk.json')).rejects.toThrow(/more than 5 redirects/);
    misbehave.clear();
    expect(reachedElsewhere).toEqual([]);
  });
});
