/**
 * A reading is registered once (site/readings.ts) and everything else derives from it. Here a fictional reading,
 * `cycle_phase`, yielded by a fictional kind that stands in for the crypto phase page, is registered the way a new
 * one would be (a line in each registry, nothing else), and the build is held to it under --keep-going: what the
 * report says each failed page keeps is what the published tree holds, and a reading it cannot keep is named as null.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { BuildOptions, BuildReport } from '../../generator/build-report.js';
import { readJson, smallSite, tempDir } from '../helpers.js';

const FILE = (symbol: string) => `${symbol}_Cycle_Phase.html`;

/**
 * Registers the fictional reading and kind, then loads the build afresh over them. The synthetic site (which has no
 * template for a fictional kind) is written before, over the real registries.
 */
async function registerFictional(): Promise<(typeof import('../../generator/build.js'))['build']> {
  vi.resetModules();
  vi.doMock('../../generator/site/readings.js', async (importOriginal) => {
    const real = await importOriginal<typeof import('../../generator/site/readings.js')>();
    const cycle_phase = { ...real.READINGS.phase, schema: real.READINGS.phase.schema };
    return { ...real, READINGS: { ...real.READINGS, cycle_phase } };
  });

  vi.doMock('../../generator/site/registry.js', async (importOriginal) => {
    const real = await importOriginal<typeof import('../../generator/site/registry.js')>();
    const { validated, PhaseReading } = await import('../../generator/site/readings.js');
    // This module graph's PageError: the build tells a page it cannot read by it.
    const { PageError } = await import('../../generator/site/errors.js');
    const { crypto_phase: _replaced, ...others } = real.KINDS;
    const cryptoCyclePhase = {
      name: 'crypto_cycle_phase',
      published: { by: 'asset', assetClass: 'CRYPTO', files: (id: string) => [FILE(id)] },
      readings: ['cycle_phase'],
      archive: false,
      cadence: 'weekly',
      parse(page: Buffer, file: string) {
        const text = /<pre id="cycle">([^<]*)<\/pre>/.exec(page.toString('utf8'))?.[1];
        let value: unknown;
        try {
          value = JSON.parse(text ?? '');
        } catch {
          throw new PageError(file, 'pre#cycle', `expected the reading as JSON, found ${JSON.stringify(text?.slice(0, 40) ?? null)}`);
        }
        return { cycle_phase: validated(PhaseReading, value, file, 'cycle_phase') };
      },
    };
    const KINDS = { ...others, crypto_cycle_phase: cryptoCyclePhase } as unknown as typeof real.KINDS;
    return { ...real, KINDS, ...real.registryOf(KINDS) };
  });
  return (await import('../../generator/build.js')).build;
}

const root = tempDir('rr-reading-registry-');
const day = (n: number) => join(root, `site-day${n}`);
const SYMBOLS = ['BTC', 'ETH', 'ADA', 'AERO', 'SPY'];

/** The fictional page of a crypto asset that lists the phase model, for a day of the synthetic site. */
function writeCyclePage(site: string, symbol: string, completion: number, asOf: string) {
  const reading = {
    label: completion < 50 ? 'Early Cycle' : 'Late Cycle',
    completion_pct: completion,
    fair_value: 100,
    max_euphoria_target: 400,
    as_of: asOf,
    as_of_basis: 'trace_end',
    model: 'cycle_phase_crypto@1',
    source_page: FILE(symbol),
  };
  writeFileSync(join(site, FILE(symbol)), `<html><body><pre id="cycle">${JSON.stringify(reading)}</pre></body></html>`);
}
const risk = (tree: string, symbol: string) => readJson(join(tree, `v1/assets/${symbol}/risk.json`)).data;

beforeAll(async () => {
  for (const n of [1, 2]) {
    await smallSite(day(n), n, '2025-06-01', SYMBOLS);
    // BTC and ADA publish the fictional page both days; ETH only from day 2 on.
    writeCyclePage(day(n), 'BTC', 20 + n, `2026-10-1${1 + n}`);
    writeCyclePage(day(n), 'ADA', 60 + n, `2026-10-1${1 + n}`);
    if (n === 2) writeCyclePage(day(n), 'ETH', 40, '2026-10-13');
  }
  build = await registerFictional();
});

let build: Awaited<ReturnType<typeof registerFictional>>;
/** A build of the small site as test/helpers.ts's buildSmall makes one, over the fictional registries. */
const buildSmall = (pages: string, out: string, extra: Partial<BuildOptions> = {}) =>
  build({ pages, out, catalog: join(pages, 'catalog.json'), now: '2026-10-14T00:30:00Z', init: !existsSync(join(out, 'v1')), ...extra });

describe('a reading registered once', () => {
  it('is discovered, read and published in the field it names, for the assets whose catalogue lists its model', async () => {
    const tree = join(root, 'tree-1');
    const report = await buildSmall(day(1), tree);
    expect(risk(tree, 'BTC').phase).toMatchObject({ completion_pct: 21, model: 'cycle_phase_crypto@1', source_page: FILE('BTC') });
    // AERO's catalogue entry lists no phase model: no page is expected of it and its field is null.
    expect(risk(tree, 'AERO').phase).toBeNull();
    // ETH's page is missing on day 1: the warning names the reading it stands for, and the tree has it null.
    expect(report.warnings).toContain(`ETH: ${FILE('ETH')} is missing; phase reads null`);
    expect(risk(tree, 'ETH').phase).toBeNull();
    // The kind's name is the asset list's pages key; the old kind's page is not read.
    const btc = readJson(join(tree, 'v1/assets/index.ultra.json')).data.assets.find((a: { symbol: string }) => a.symbol === 'BTC');
    expect(btc.pages.crypto_cycle_phase).toBe(FILE('BTC'));
    expect(btc.pages.crypto_phase).toBeUndefined();
  });

  it('under --keep-going, the report names what each failed page keeps, and the tree holds exactly that', async () => {
    const tree = join(root, 'tree-2');
    await buildSmall(day(1), tree);
    const before = { BTC: risk(tree, 'BTC'), ADA: risk(tree, 'ADA') };
    // Day 2: BTC's page is unreadable, ADA's gone (the previous build read it), ETH's unreadable with nothing to keep.
    const pages = join(root, 'site-day2-broken');
    rmSync(pages, { recursive: true, force: true });
    await smallSite(pages, 2, '2025-06-01', SYMBOLS);
    writeFileSync(join(pages, FILE('BTC')), '<html><body><pre id="cycle">{"label": </pre></body></html>');
    writeFileSync(join(pages, FILE('ETH')), '<html><body>nothing here</body></html>');
    const report: Partial<BuildReport> = await buildSmall(pages, tree, { keepGoing: true, now: '2026-10-15T00:30:00Z' });

    expect(report.carried).toEqual([
      { file: FILE('BTC'), kind: 'crypto_cycle_phase', symbol: 'BTC', reason: 'unreadable', readings: ['cycle_phase'] },
      { file: FILE('ETH'), kind: 'crypto_cycle_phase', symbol: 'ETH', reason: 'unreadable', readings: [] },
      { file: FILE('ADA'), kind: 'crypto_cycle_phase', symbol: 'ADA', reason: 'missing', readings: ['cycle_phase'] },
    ]);
    expect(report.errors).toEqual([
      expect.stringMatching(/^BTC_Cycle_Phase\.html: pre#cycle: /),
      expect.stringMatching(/^ETH_Cycle_Phase/),
    ]);
    expect(report.warnings).toContain(`ETH: ${FILE('ETH')} failed and the previous tree holds no phase; phase reads null`);
    // Each carried reading is the previous tree's, as published; the one with nothing to keep is null.
    expect(risk(tree, 'BTC').phase).toEqual(before.BTC.phase);
    expect(risk(tree, 'ADA').phase).toEqual(before.ADA.phase);
    expect(risk(tree, 'ETH').phase).toBeNull();
    // The rest of a carrying asset is this day's.
    expect(risk(tree, 'BTC').gravity.as_of).not.toBe(before.BTC.gravity.as_of);
  });

  it('a page of the fictional kind that reads fine is served as read, beside carried ones', async () => {
    const tree = join(root, 'tree-3');
    await buildSmall(day(1), tree);
    await buildSmall(day(2), tree, { now: '2026-10-15T00:30:00Z' });
    expect(risk(tree, 'ETH').phase).toMatchObject({ completion_pct: 40, as_of: '2026-10-13' });
    expect(risk(tree, 'BTC').phase.completion_pct).toBe(22);
    expect(JSON.parse(readFileSync(join(tree, 'v1/assets/BTC/risk.json'), 'utf8')).model_version.cycle_phase_crypto).toBe('1');
  });
});
