/**
 * The docs page's package files at the edge. They are not in the worker's bundle (Swagger UI is forty times the
 * API path's size): the deploy puts them beside the worker as its static assets, under `docs/` (wrangler.toml's
 * `[assets]`), and the worker reads them through the assets binding, once per isolate, so they are served like
 * any other docs file (the shim's headers, a strong ETag, 304). Served as they are; the CDN in front compresses.
 */
import { loadedOnce, type DocsFiles } from './docs.js';
import { OriginError, type OriginFile } from './origin.js';
import { sha256Hex } from './sha256.js';

/** The part of the Workers runtime's assets binding (a Fetcher) used here. */
export interface AssetsBinding {
  fetch(request: Request): Promise<Response>;
}

export function assetDocsFiles(assets: AssetsBinding): DocsFiles {
  const load = async (name: string): Promise<OriginFile> => {
    // The assets binding matches the path only; the host is a placeholder.
    const res = await assets.fetch(new Request(`https://assets.invalid/docs/${name}`));
    if (!res.ok) throw new OriginError(`docs/${name}: the deployment's static assets answered ${res.status}`);
    const bytes = new Uint8Array(await res.arrayBuffer());
    return { bytes, etag: `"${await sha256Hex(bytes)}"` };
  };
  return loadedOnce(load);
}
