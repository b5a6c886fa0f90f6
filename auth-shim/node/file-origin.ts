/**
 * The Node server's origin: the built tree on disk, its hot files held in memory with their manifest ETags.
 * A rebuild swaps `v1/` underneath; the manifest is watched and the memory copy reloaded when it changes.
 */
import { readFileSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { TREE } from '../../generator/contract/index.js';
import { OriginError, type Origin, type OriginFile } from '../origin.js';

/** History ledgers are read on demand (only unusual page cuts need them); everything else is kept in memory. */
const COLD = /^assets\/[^/]+\/history\/full\.json$/;
const COLD_LIMIT = 64;

interface Manifest { built_at: string; files: Record<string, { size: number; sha256: string }> }

export class FileOrigin implements Origin {
  private hot = new Map<string, OriginFile>();
  private cold = new Map<string, OriginFile>();
  private etags = new Map<string, string>();
  private manifestMtime = 0;
  private timer: ReturnType<typeof setInterval> | undefined;

  private constructor(readonly dir: string) {}

  static open(publicDir: string, watchMs = 5_000): FileOrigin {
    const o = new FileOrigin(join(publicDir, 'v1'));
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
    const path = join(this.dir, TREE.manifest);
    let manifest: Manifest;
    try {
      this.manifestMtime = statSync(path).mtimeMs;
      manifest = JSON.parse(readFileSync(path, 'utf8')) as Manifest;
    } catch (e) {
      throw new Error(`${path}: cannot read the tree's manifest (${(e as Error).message}); build the tree first`);
    }
    const hot = new Map<string, OriginFile>();
    const etags = new Map<string, string>();
    for (const [file, entry] of Object.entries(manifest.files)) {
      const etag = `"${entry.sha256}"`;
      etags.set(file, etag);
      if (!COLD.test(file)) hot.set(file, { bytes: new Uint8Array(readFileSync(join(this.dir, file))), etag });
    }
    [this.manifest, this.hot, this.etags, this.cold] = [manifest, hot, etags, new Map()];
  }

  reloadIfChanged(): void {
    try {
      if (statSync(join(this.dir, TREE.manifest)).mtimeMs !== this.manifestMtime) this.load();
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
      const file = { bytes: new Uint8Array(await readFile(join(this.dir, path))), etag };
      if (this.cold.size >= COLD_LIMIT) this.cold.delete(this.cold.keys().next().value!);
      this.cold.set(path, file);
      return file;
    } catch (e) {
      throw new OriginError(`${path}: ${(e as Error).message}`);
    }
  }
}
