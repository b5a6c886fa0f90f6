/** The bulk response, merged from the covered assets' risk files: the shim composes it, the build's example too. */
import { DISCLAIMER } from './constants.js';
import type { AssetRiskResponse } from './shapes.js';
import { newest } from './time.js';

/** An asset's risk file (`AssetRiskResponse`), as far as the merge reads it. */
export type RiskDoc = Pick<AssetRiskResponse, 'as_of' | 'model_version' | 'data'>;

/** `found` holds each requested symbol's risk file, or undefined for a symbol the service does not cover. */
export function bulkBody(requested: string[], found: (RiskDoc | undefined)[]) {
  const assets: Record<string, unknown> = {};
  const missing: string[] = [];
  const versions: Record<string, string> = {};
  const asOf: (string | null)[] = [];
  requested.forEach((s, i) => {
    const doc = found[i];
    if (!doc) return void missing.push(s);
    assets[s] = doc.data;
    asOf.push(doc.as_of);
    Object.assign(versions, doc.model_version);
  });
  const sorted = Object.keys(versions).sort();
  return {
    as_of: newest(asOf),
    model_version: sorted.length ? Object.fromEntries(sorted.map((k) => [k, versions[k]!])) : null,
    disclaimer: DISCLAIMER,
    data: { assets, requested, missing, count: Object.keys(assets).length },
  };
}
