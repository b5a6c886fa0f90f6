/**
 * The tree writer: documents handed over one by one make the same tree, a document whose bytes the previous
 * tree already holds is lent from it (variants included) rather than written, and a tree that breaks the
 * contract leaves nothing behind.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { TREE } from '../../../generator/contract/tree.js';
import { openApiDocument } from '../../../generator/openapi/document.js';
import { TreeInvalid, TreeWriter } from '../../../generator/output/tree-writer.js';
import { readTree } from '../../../generator/output/write-tree.js';
import { openPrevious, type PreviousTree } from '../../../generator/previous/previous-tree.js';
import { buildSmall, smallSite, tempDir, treeHashes } from '../../helpers.js';

const root = tempDir('rr-tree-writer-');
const out = join(root, 'out');
const AT = '2026-10-14T08:30:00Z';
let previous: PreviousTree;
let docs: Map<string, unknown>;

beforeAll(async () => {
  const pages = join(root, 'site');
  await smallSite(pages, 1, '2025-06-01', ['BTC', 'SPY']);
  await buildSmall(pages, out);
  previous = (await openPrevious(out))!;
  docs = new Map([...(await readTree(out))].filter(([p]) => p !== TREE.manifest).map(([p, text]) => [p, JSON.parse(text) as unknown]));
});

const writer = () => TreeWriter.open(out, openApiDocument(), { manifest: previous.manifest, tree: previous.localTree });

describe('TreeWriter', () => {
  it('lends what the previous tree holds, variants included, and writes only what changed', async () => {
    const before = treeHashes(out);
    const w = await writer();
    for (const [path, doc] of docs) w.add(path, path === TREE.health ? { ...(doc as object), built_at: AT } : doc);
    const { linked, files, manifest } = await w.finish(AT, previous.manifest.pages!);
    expect(files - linked).toBe(2); // health.json and the manifest
    const after = treeHashes(out);
    const differ = [...after.keys()].filter((p) => after.get(p) !== before.get(p)).sort();
    expect(differ).toEqual([TREE.health, TREE.manifest].sort());
    const risk = TREE.risk('BTC');
    expect(manifest.files[risk]).toEqual(previous.manifest.files[risk]);
    expect(manifest.files[risk]!.encodings).toBeDefined();
  });

  it('discards a tree that breaks the contract: the problems named, no staging folder left, the live tree untouched', async () => {
    const before = treeHashes(out);
    const w = await writer();
    for (const [path, doc] of docs) {
      const broken =
        path === TREE.risk('SPY') ? { ...(doc as { data: object }), data: { ...(doc as { data: object }).data, price: 'high' } } : doc;
      w.add(path, broken);
    }
    const error = await w.finish(AT, []).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TreeInvalid);
    expect((error as TreeInvalid).problems).toEqual([expect.stringMatching(/^assets\/SPY\/risk\.json: \/data\/price: /)]);
    expect(readdirSync(join(out, '.trees')).filter((n) => n.startsWith('.'))).toEqual([]);
    expect(treeHashes(out)).toEqual(before);
  });
});
