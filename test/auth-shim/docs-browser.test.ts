/**
 * The docs page in a real browser (decision 24): headless Chromium (Debian's, driven by playwright-core) opens
 * /docs on the Node server over a built tree with the demo keys, finds every endpoint of the contract, sends one
 * request through "Try it out" with the demo key and sees the 200 body; no request leaves the origin. The
 * screenshot is kept in test-results/docs.png.
 */
import { existsSync, mkdirSync } from 'node:fs';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer } from '../../auth-shim/node/server.js';
import { openApiDocument } from '../../generator/openapi/document.js';
import { ROOT } from '../helpers.js';
import { KEY, KEYS_FILE, builtTree } from './tree.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const present = existsSync(CHROMIUM);
if (!present && process.env.CI === 'true')
  throw new Error(`${CHROMIUM}: no Chromium; CI must run the browser test (apt-get install chromium)`);
if (!present) console.warn(`docs-browser: skipped, no Chromium at ${CHROMIUM} (set CHROMIUM_PATH)`);

let server: Server;
let base = '';
let browser: Browser;

beforeAll(async () => {
  if (!present) return;
  const out = builtTree();
  const s = await startServer({ publicDir: out, keysFile: KEYS_FILE, port: 0, watchMs: 0 });
  [server, base] = [s.server, s.url];
  // The flags keep a sandboxed test machine's Chromium off the network it has no access to.
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
});
afterAll(async () => {
  await browser?.close();
  if (server) await new Promise<void>((r) => server.close(() => r()));
});

describe.skipIf(!present)(`/docs in headless Chromium (${CHROMIUM})`, () => {
  it('renders every endpoint, sends a request with the demo key through "Try it out", and reaches no other host', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 2000 } });
    const elsewhere: string[] = [];
    page.on('request', (r) => {
      if (!r.url().startsWith(base) && !r.url().startsWith('data:')) elsewhere.push(r.url());
    });
    const failures: string[] = [];
    page.on('pageerror', (e) => failures.push(e.message));
    await page.goto(`${base}/docs`);
    await page.waitForSelector('.opblock');

    const shown = await page.$$eval('.opblock-summary-path', (els) => els.map((e) => e.getAttribute('data-path')));
    expect(shown.sort()).toEqual(Object.keys(openApiDocument().paths).sort());

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
    await status.waitFor();
    expect((await status.textContent())?.trim()).toBe('200');
    const body = await op.locator('.live-responses-table tr.response .response-col_description pre').first().textContent();
    expect(JSON.parse(body!).data.symbol).toBe('BTC');

    mkdirSync(join(ROOT, 'test-results'), { recursive: true });
    await page.screenshot({ path: join(ROOT, 'test-results', 'docs.png'), fullPage: false });
    expect(elsewhere).toEqual([]);
    expect(failures).toEqual([]);
  });
});
