/**
 * The bytes a build writes, pinned: a small site built on day 1 (a new ledger) and continued on day 2, every
 * file of the tree (compressed variants included) by SHA-256, against `fixtures/golden/small-site.json`. Work on
 * the build's speed must leave this unchanged; a change of output on purpose updates it with `vitest -u`.
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROOT, buildSmall, smallSite, tempDir, treeHashes } from '../helpers.js';

const root = tempDir('rr-golden-');
const out = join(root, 'public');

beforeAll(async () => {
  for (const day of [1, 2]) {
    const pages = join(root, `day${day}`);
    await smallSite(pages, day);
    await buildSmall(pages, out, { now: `2026-10-${13 + day}T00:30:00Z`, init: day === 1 });
  }
});

describe('golden tree', () => {
  it('a day-1 then day-2 build of the small site writes exactly the pinned bytes', async () => {
    const hashes = Object.fromEntries(treeHashes(out));
    // A change of output on purpose (a new page kind, a contract change) pins the new bytes: the message says how.
    const pin = 'the tree differs from fixtures/golden/small-site.json; on purpose: npx vitest run test/generator/golden.test.ts -u';
    await expect(JSON.stringify(hashes, null, 2) + '\n', pin).toMatchFileSnapshot(
      join('..', '..', 'fixtures', 'golden', 'small-site.json'),
    );
  });

  it('the compiled build (as the CLI runs it, parsing on worker threads with --jobs 2) writes the same pinned bytes', async () => {
    // dist/ is what the CLI runs: from there variants are compressed on their own thread and, with --jobs 2, pages are
    // parsed on worker threads; from the sources both happen in-process.
    const compiled = (await import(join(ROOT, 'dist', 'generator', 'build.js'))) as typeof import('../../generator/build.js');
    const out2 = join(root, 'compiled');
    for (const day of [1, 2])
      await compiled.build({
        pages: join(root, `day${day}`),
        out: out2,
        catalog: join(root, `day${day}`, 'catalog.json'),
        now: `2026-10-${13 + day}T00:30:00Z`,
        init: day === 1,
        jobs: 2,
      });
    expect(treeHashes(out2)).toEqual(treeHashes(out));
  });
});
