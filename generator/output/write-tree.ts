/** Writes a tree to a staging folder and publishes it whole (see live-tree.ts), so a reader never sees half a build. */
import { copyFile, link, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import fg from 'fast-glob';
import { ENCODING_SUFFIX, type Encoding } from '../contract/encodings.js';
import { TREE } from '../contract/tree.js';
import { forEachLimited } from '../limited.js';
import { discardStaging, liveTree, newStaging, publish } from './live-tree.js';
import type { Digest, Manifest } from './manifest.js';
import { StageThread } from './stage-files.js';

/**
 * Files whose bytes the previous tree already holds are hard-linked from it instead of written again: a
 * rebuild where little changed costs metadata, not 35 MB of writes (and no compression).
 */
export interface Reuse {
  /** The folder holding the previous tree's files. */
  tree: string;
  /** Paths to take from it, each checked with `reusable`. */
  paths: Set<string>;
}

/**
 * Which of `candidates` (paths with their size in the previous manifest, compressed variants included) the
 * previous tree can lend. A file is trusted only if its size matches and it is no newer than the previous
 * manifest (written last), so a hand-edited file is made again.
 */
export async function reusable(tree: string, candidates: Map<string, number>): Promise<Set<string>> {
  const manifestMtime = await stat(join(tree, TREE.manifest)).then(
    (s) => s.mtimeMs,
    () => -Infinity,
  );
  const out = new Set<string>();
  const paths = [...candidates.keys()];
  for (let i = 0; i < paths.length; i += 64) {
    await Promise.all(
      paths.slice(i, i + 64).map(async (path) => {
        try {
          const st = await stat(join(tree, path));
          if (st.size === candidates.get(path) && st.mtimeMs <= manifestMtime) out.add(path);
        } catch {
          // absent: made again
        }
      }),
    );
  }
  return out;
}

/** Every file a manifest lists, compressed variants included, with its size: what `reusable` checks. */
export function manifestSizes(m: Manifest): Map<string, number> {
  const sizes = new Map<string, number>();
  for (const [path, e] of Object.entries(m.files)) {
    sizes.set(path, e.size);
    for (const [enc, d] of Object.entries(e.encodings ?? {})) sizes.set(path + ENCODING_SUFFIX[enc as Encoding], d!.size);
  }
  return sizes;
}

/** writeFile, whose failure names the file: a failed write() (ENOSPC, EIO) carries no path of its own. */
export async function writeNamed(file: string, data: string | Uint8Array): Promise<void> {
  try {
    await writeFile(file, data);
  } catch (e) {
    (e as NodeJS.ErrnoException).path ??= file;
    throw e;
  }
}

/** A hard link, or a copy where links cannot be made (another filesystem). */
async function lend(from: string, to: string): Promise<boolean> {
  try {
    await link(from, to);
    return true;
  } catch {
    await copyFile(from, to);
    return false;
  }
}

/**
 * A tree being written: files go to the staging thread as soon as they are ready (the build writes and compresses
 * while it still reads pages), then `publish` lends the previous tree's files, writes the manifest last and swaps
 * the tree in. A file newer than its manifest is one edited by hand, never reused (see `reusable`), and a staging
 * folder with a manifest is a finished one. Until `publish`, `discard` leaves no trace.
 */
export class StagedTree {
  private pending: Promise<unknown>[] = [];
  private failed: unknown;
  /** Files written so far (not lent), for the build report. */
  private written = 0;

  private constructor(
    readonly out: string,
    readonly dir: string,
    private readonly thread: StageThread,
  ) {}

  static async open(out: string): Promise<StagedTree> {
    const dir = await newStaging(out);
    return new StagedTree(out, dir, new StageThread(dir));
  }

  /**
   * Writes the file (unless `file` is false: the previous tree lends it), and with `variants` its compressed
   * variants, whose digests it gives. The bytes are handed over (see StageThread). A failure also surfaces at
   * `publish`.
   */
  stage(path: string, bytes: Uint8Array, { file = true, variants = false } = {}): Promise<Record<Encoding, Digest> | undefined> {
    const done = this.thread.stage(path, bytes, { file, variants });
    this.pending.push(
      done.then(
        (encodings) => void (this.written += (file ? 1 : 0) + Object.keys(encodings ?? {}).length),
        (e: unknown) => void (this.failed ??= e),
      ),
    );
    return done;
  }

  /** Publishes the tree; `files` counts every file in it (written or lent), the manifest included. */
  async publish(manifestText: string, builtAt: string, reuse?: Reuse): Promise<{ linked: number; files: number }> {
    let linked = 0;
    try {
      await Promise.all(this.pending);
      if (this.failed) throw this.failed;
      await this.thread.close();
      const lent = [...(reuse?.paths ?? [])];
      const dirs = new Map<string, Promise<unknown>>();
      await forEachLimited(lent, 64, async (path) => {
        const folder = dirname(join(this.dir, path));
        if (!dirs.has(folder)) dirs.set(folder, mkdir(folder, { recursive: true }));
        await dirs.get(folder);
        if (await lend(join(reuse!.tree, path), join(this.dir, path))) linked++;
      });
      await writeNamed(join(this.dir, TREE.manifest), manifestText);
      this.written++;
      await publish(this.out, this.dir, builtAt);
    } catch (e) {
      await this.discard();
      throw e;
    }
    return { linked, files: this.written + (reuse?.paths.size ?? 0) };
  }

  async discard(): Promise<void> {
    await Promise.allSettled(this.pending);
    await this.thread.close();
    await discardStaging(this.dir);
  }
}

/** A whole tree at once: `files` (the manifest among them) written, `reuse.paths` lent, then published. */
export async function writeTree(
  outDir: string,
  files: Map<string, string | Uint8Array>,
  builtAt: string,
  reuse?: Reuse,
): Promise<{ linked: number; files: number }> {
  const staged = await StagedTree.open(outDir);
  for (const [path, data] of files)
    if (path !== TREE.manifest) void staged.stage(path, typeof data === 'string' ? Buffer.from(data) : data);
  return staged.publish(String(files.get(TREE.manifest) ?? ''), builtAt, reuse);
}

/** Every JSON file of the live tree of `dir` as text, by its path inside v1 (compressed variants left out). */
export async function readTree(dir: string): Promise<Map<string, string>> {
  const root = liveTree(dir);
  const out = new Map<string, string>();
  if (!root || !existsSync(root)) return out;
  const paths = (await fg('**/*.json', { cwd: root, onlyFiles: true, dot: false })).sort();
  for (let i = 0; i < paths.length; i += 64) {
    const chunk = paths.slice(i, i + 64);
    const texts = await Promise.all(chunk.map((p) => readFile(join(root, p), 'utf8')));
    chunk.forEach((p, k) => out.set(p, texts[k]!));
  }
  return out;
}
