/**
 * The Node server's origin: the built tree on disk, its hot files held in memory with their manifest ETags.
 * A rebuild swaps the `v1` link to a new tree; the link and the manifest are watched and the memory copy
 * reloaded when either changes. Each load reads one resolved tree folder, so a swap mid-load cannot mix two.
 */
import { readFileSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { asManifest, ENCODING_SUFFIX, isLedger, TREE, type Encoding } from '../../generator/contract/index.js';
import type { Manifest } from '../../generator/contract/shapes.js';
import { liveTree } from '../../generator/output/live-tree.js';
import { OriginError, type Origin, type OriginFile } from '../origin.js';

/** History ledgers are read on demand (only unusual page cuts need them); everything else is kept in memory. */
const COLD_LIMIT = 64;

export class FileOrigin implements Origin {
  private hot = new Map<string, OriginFile>();
  private cold = new Map<string, OriginFile>();
  private etags = new Map<string, string>();
  private manifestMtime = 0;
  private timer: ReturnType<typeof setInterval> | undefined;

  /** The resolved folder of the tree in memory. */
  private dir = '';
  /** Called after a rebuilt tree replaced the one in memory. */
  onReload: () => void = () => {};

  private constructor(readonly publicDir: string) {}

  static open(publicDir: string, watchMs = 5_000): FileOrigin {
    const o = new FileOrigin(publicDir);
    o.load();
    if (watchMs > 0) {
      o.timer = setInterval(() => o.reloadIfChanged(), watchMs);
      o.timer.unref();
    }
    return o;
  }

  get builtAt(): string {
    return this.manifest?.built_at ?? '';
  }
  private manifest: Manifest | undefined;

  private load(): void {
    const dir = liveTree(this.publicDir);
    if (!dir) throw new Error(`${join(this.publicDir, 'v1')}: no built tree here; build the tree first`);
    const path = join(dir, TREE.manifest);
    let manifest: Manifest;
    let mtime: number;
    try {
      mtime = statSync(path).mtimeMs;
      manifest = JSON.parse(readFileSync(path, 'utf8')) as Manifest;
    } catch (e) {
      throw new Error(`${path}: cannot read the tree's manifest (${(e as Error).message}); build the tree first`, { cause: e });
    }
    asManifest(manifest, (problem) => new Error(`${join(dir, problem)}; build the tree again`));
    const hot = new Map<string, OriginFile>();
    const etags = new Map<string, string>();
    const read = (file: string) => new Uint8Array(readFileSync(join(dir, file)));
    for (const [file, entry] of Object.entries(manifest.files)) {
      const etag = `"${entry.sha256}"`;
      etags.set(file, etag);
      if (isLedger(file)) continue;
      const encoded = Object.entries(entry.encodings ?? {}).map(([e, d]) => [
        e,
        { bytes: read(file + ENCODING_SUFFIX[e as Encoding]), etag: `"${d!.sha256}"` },
      ]);
      hot.set(file, { bytes: read(file), etag, ...(encoded.length ? { encoded: Object.fromEntries(encoded) } : {}) });
    }
    [this.dir, this.manifestMtime, this.manifest, this.hot, this.etags, this.cold] = [dir, mtime, manifest, hot, etags, new Map()];
  }

  reloadIfChanged(): void {
    try {
      const dir = liveTree(this.publicDir);
      if (dir && (dir !== this.dir || statSync(join(dir, TREE.manifest)).mtimeMs !== this.manifestMtime)) {
        this.load();
        this.onReload();
      }
    } catch {
      // mid-swap or gone: keep serving what is in memory
    }
  }

  close(): void {
    clearInterval(this.timer);
  }

  peek(path: string): OriginFile | undefined {
    return this.hot.get(path);
  }

  async get(path: string): Promise<OriginFile | null> {
    const hot = this.hot.get(path);
    if (hot) return hot;
    const etag = this.etags.get(path);
    if (!etag) return null;
    const cached = this.cold.get(path);
    if (cached?.etag === etag) return cached;
    try {
      let bytes: Uint8Array<ArrayBuffer>;
      try {
        bytes = new Uint8Array(await readFile(join(this.dir, path)));
      } catch (e) {
        // The tree in memory was replaced and removed by a rebuild: follow the link now rather than at the next tick.
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
        const before = this.dir;
        this.reloadIfChanged();
        if (this.dir === before) throw e;
        return this.get(path);
      }
      const file = { bytes, etag };
      if (this.cold.size >= COLD_LIMIT) this.cold.delete(this.cold.keys().next().value!);
      this.cold.set(path, file);
      return file;
    } catch (e) {
      throw new OriginError(`${path}: ${(e as Error).message}`);
    }
  }
}
