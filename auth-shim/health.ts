/**
 * `GET /v1/health` (decision 26): the tree's health file, whose `status` is made at request time: `stale` once
 * the newest reading in the tree is older than the configured age, so a probe notices a tree that stopped
 * updating. The status code stays 200.
 */
import { TREE, toJson } from '../generator/contract/index.js';
import { sha256Hex } from './sha256.js';
import type { ShimRequest, ShimResponse } from './exchange.js';
import { OriginError, type JsonCache, type Origin, type OriginFile } from './origin.js';
import { fileResponse } from './representation.js';

const STALE_AFTER_MS = 36 * 3_600_000;

interface HealthDoc {
  status: string;
  newest_reading?: string | null;
}

const encoder = new TextEncoder();

export class Health {
  /** The restated file, per tree (its tag) and status: made once, not per probe. */
  private restated = new Map<string, OriginFile>();
  constructor(
    private origin: Origin,
    private json: JsonCache,
    private staleAfterMs = STALE_AFTER_MS,
  ) {}

  async response(request: ShimRequest, now: number, headers: Record<string, string>): Promise<ShimResponse> {
    const file = this.origin.peek?.(TREE.health) ?? (await this.origin.get(TREE.health));
    const health = await this.json.get<HealthDoc>(TREE.health);
    if (!file || !health) throw new OriginError(`${TREE.health}: absent from the origin`);
    const newest = health.doc.newest_reading ? Date.parse(health.doc.newest_reading) : NaN;
    const status = Number.isFinite(newest) && now - newest <= this.staleAfterMs ? 'ok' : 'stale';
    if (status === health.doc.status) return fileResponse(request, file, headers);
    const key = `${file.etag}|${status}`;
    let restated = this.restated.get(key);
    if (!restated) {
      const bytes = encoder.encode(toJson({ ...health.doc, status })) as Uint8Array<ArrayBuffer>;
      restated = { bytes, etag: `"${await sha256Hex(key)}"` };
      if (this.restated.size >= 8) this.restated.clear();
      this.restated.set(key, restated);
    }
    return fileResponse(request, restated, headers);
  }
}
