/**
 * Debian's Chromium for the browser tests: where it is, whether it is there (a test without it is skipped, saying
 * so, and under CI=true fails: CI installs it), and how a test launches it.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Whether Chromium is there for the test file `name`; says why it skips when it is not. */
export function chromiumFor(name: string): boolean {
  const present = existsSync(CHROMIUM);
  if (!present && process.env.CI === 'true')
    throw new Error(`${CHROMIUM}: no Chromium; CI must run the browser test (apt-get install chromium)`);
  if (!present) console.warn(`${name}: skipped, no Chromium at ${CHROMIUM} (set CHROMIUM_PATH)`);
  return present;
}

/** Headless Chromium, kept off the network a sandboxed test machine has no access to. */
export const launchChromium = (): Promise<Browser> =>
  chromium.launch({
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
