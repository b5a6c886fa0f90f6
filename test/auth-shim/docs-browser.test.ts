/**
 * The docs page in a real browser (decision 24): headless Chromium (Debian's, driven by playwright-core) opens
 * /docs on the Node server over a built tree with the demo keys, finds every endpoint of the contract, sends one
 * request through "Try it out" with the demo key and sees the 200 body; no request leaves the origin. The same on a
 * tree built with `--public-url` naming another origin, as a staging server or a laptop serves a production build:
 * the document keeps the public URL as its first server, and "Try it out" still calls the origin serving /docs. The
 * screenshots are kept in test-results/.
 */
import { mkdirSync } from 'node:fs';
import type { Server } from 'node:http';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer } from '../../auth-shim/node/server.js';
import { openApiDocument } from '../../generator/openapi/document.js';
import { buildSmall, ROOT, smallSite, tempDir } from '../helpers.js';
import { CHROMIUM, chromiumFor, launchChromium } from './chromium.js';
import { KEY, KEYS_FILE, builtTree } from './tree.js';

const present = chromiumFor('docs-browser');

/** The address a production build publishes: another origin than the one the test serves /docs from. */
const PUBLIC_URL = 'https://api.risk-readings.example';

const servers: Server[] = [];
let browser: Browser;

/** The Node server over `tree`, with the demo keys; its base URL. */
async function serve(tree: string): Promise<string> {
  const s = await startServer({ publicDir: tree, keysFile: KEYS_FILE, port: 0, watchMs: 0 });
  servers.push(s.server);
  return s.url;
}

beforeAll(async () => {
  if (!present) return;
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
});

/**
 * Opens `base`/docs as a reader would: checks every endpoint is shown, authorizes with the demo key, sends
 * getAssetRisk for BTC through "Try it out". Returns the servers the page offers, where the request went, and every
 * request that went anywhere but `base`.
 */
async function tryItOut(base: string, screenshot: string) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 2000 } });
  // Each step waits for what it expects, as long as a busy machine takes (the test's own timeout is the bound).
  page.setDefaultTimeout(60_000);
  const elsewhere: string[] = [];
  const sent: string[] = [];
  page.on('request', (r) => {
    if (!r.url().startsWith(base) && !r.url().startsWith('data:')) elsewhere.push(r.url());
    if (r.url().includes('/v1/assets/BTC/risk')) sent.push(r.url());
  });
  // A request the page's Content-Security-Policy blocks never reaches 'request': Chromium reports it on the console.
  const blocked: string[] = [];
  page.on('console', (m) => {
    if (/Content Security Policy|Refused to connect/i.test(m.text())) blocked.push(m.text());
  });
  const failures: string[] = [];
  page.on('pageerror', (e) => failures.push(e.message));
  await page.goto(`${base}/docs`);
  await page.waitForSelector('.opblock');

  const shown = await page.$$eval('.opblock-summary-path', (els) => els.map((e) => e.getAttribute('data-path')));
  // One block per operation (a path with several methods shows one for each), and one per webhook the API posts.
  const doc = openApiDocument();
  const operations = Object.entries(doc.paths).flatMap(([path, item]) => Object.keys(item).map(() => path));
  expect(shown.sort()).toEqual([...operations, ...Object.keys(doc.webhooks)].sort());
  const offered = await page.$$eval('.servers select option', (els) => els.map((e) => (e as HTMLOptionElement).value));

  // Authorize with the demo key, as a reader would.
  await page.click('.btn.authorize');
  const apiKey = page.locator('.auth-container', { hasText: 'ApiKey' }).first();
  await apiKey.locator('input').fill(KEY.pro);
  await apiKey.locator('button.authorize').click();
  await page.click('.btn-done, .close-modal');

  const op = page.locator('#operations-assets-getAssetRisk');
  await op.locator('.opblock-summary').click();
  await op.locator('input[placeholder="symbol"]').fill('BTC');
  await op.locator('button.execute').click();
  const status = op.locator('.live-responses-table tr.response .response-col_status').first();
  await status.waitFor().catch(() => {
    throw new Error(`"Try it out" showed no response; sent ${JSON.stringify(sent)}; blocked: ${JSON.stringify(blocked)}`);
  });
  const code = (await status.textContent())?.trim();
  // A request the page could not send shows a status and no body.
  const body =
    code === '200' ? await op.locator('.live-responses-table tr.response .response-col_description pre').first().textContent() : null;

  mkdirSync(join(ROOT, 'test-results'), { recursive: true });
  await page.screenshot({ path: join(ROOT, 'test-results', screenshot), fullPage: false });
  await page.close();
  return { offered, sent, status: code, body, elsewhere, blocked, failures };
}

describe.skipIf(!present)(`/docs in headless Chromium (${CHROMIUM})`, () => {
  it('renders every endpoint, sends a request with the demo key through "Try it out", and reaches no other host', async () => {
    const base = await serve(builtTree());
    const seen = await tryItOut(base, 'docs.png');
    expect(seen.status).toBe('200');
    expect(JSON.parse(seen.body!).data.symbol).toBe('BTC');
    expect(seen.sent).toEqual([`${base}/v1/assets/BTC/risk`]);
    // The document's server is "/", this origin: offered once.
    expect(seen.offered).toEqual([base]);
    expect([seen.elsewhere, seen.blocked, seen.failures]).toEqual([[], [], []]);
  });

  it(`on a tree built with --public-url ${PUBLIC_URL}, "Try it out" calls the origin serving /docs; the document keeps its server`, async () => {
    const root = tempDir('rr-docs-public-url-');
    const pages = join(root, 'site');
    await smallSite(pages, 1);
    const tree = join(root, 'public');
    await buildSmall(pages, tree, { publicUrl: PUBLIC_URL });
    const base = await serve(tree);
    const served = (await (await fetch(`${base}/v1/openapi.json`)).json()) as { servers: { url: string }[] };
    expect(served.servers[0]!.url).toBe(PUBLIC_URL);

    const seen = await tryItOut(base, 'docs-public-url.png');
    expect(seen.status).toBe('200');
    expect(JSON.parse(seen.body!).data.symbol).toBe('BTC');
    expect(seen.sent).toEqual([`${base}/v1/assets/BTC/risk`]);
    // This origin first, selected; the public URL still listed after it.
    expect(seen.offered).toEqual([base, PUBLIC_URL]);
    expect([seen.elsewhere, seen.blocked, seen.failures]).toEqual([[], [], []]);
  });

  it('the page still lets it reach no other host: its Content-Security-Policy', async () => {
    const base = await serve(builtTree());
    const res = await fetch(`${base}/docs`);
    expect(res.headers.get('content-security-policy')).toBe(
      "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'",
    );
  });
});
