/**
 * Step: body. Every body is a file of the built tree, or a cut or merge of such files (a history page the build
 * did not precompute, a bulk read); nothing about markets is computed here. A file the tree should hold and
 * does not is an OriginError (502 upstream_error).
 */
import {
  PRECOMPUTED_PAGES,
  TREE,
  bulkBody,
  changesPage,
  historyPage,
  toJson,
  type Audience,
  type ChangeLedger,
  type Ledger,
  type RiskDoc,
} from '../../generator/contract/index.js';
import type { PageQuery } from '../../generator/contract/history-page.js';
import type { Catalog } from '../../generator/contract/shapes.js';
import { sha256Hex } from '../sha256.js';
import { JsonCache, OriginError, type Origin } from '../origin.js';
import type { ShimRequest, ShimResponse } from '../exchange.js';
import { composedResponse, fileResponse, type Compressor } from '../representation.js';
import { canonicalSymbol } from './access.js';

type Headers = Record<string, string>;
const encoder = new TextEncoder();

export class Bodies {
  constructor(
    private readonly origin: Origin,
    private readonly json: JsonCache,
    private readonly compressor: Compressor,
  ) {}

  /** The build's catalogue; synchronous when it is in memory. */
  catalog(): Catalog | Promise<Catalog> {
    return this.json.peek<Catalog>(TREE.catalog)?.doc ?? this.json.get<Catalog>(TREE.catalog).then((c) => present(c, TREE.catalog).doc);
  }

  /** A file of the tree as the response; synchronous when the origin holds it in memory. */
  file(request: ShimRequest, path: string, headers: Headers): ShimResponse | Promise<ShimResponse> {
    const hot = this.origin.peek?.(path);
    if (hot) return fileResponse(request, hot, headers);
    return this.origin.get(path).then((f) => fileResponse(request, present(f, path), headers));
  }

  /** A history page: the precomputed file when the query is one, else cut from the asset's ledger. */
  async history(request: ShimRequest, symbol: string, q: PageQuery, headers: Headers): Promise<ShimResponse> {
    const ready = PRECOMPUTED_PAGES.find((p) => p.limit === q.limit && p.maxLimit === q.maxLimit);
    if (ready && !q.cursor && !q.from && !q.to) return this.file(request, TREE.historyPage(symbol, q.limit), headers);
    const full = present(await this.json.get<Ledger>(TREE.historyFull(symbol)), TREE.historyFull(symbol));
    const tag = `${full.etag}|${q.limit}|${q.maxLimit}|${q.cursor ?? ''}|${q.from ?? ''}|${q.to ?? ''}`;
    return this.composed(request, historyPage(full.doc, q), tag, headers);
  }

  /** A page of the change feed, cut from its ledger for the caller's audience. */
  async changes(request: ShimRequest, q: PageQuery, audience: Audience, headers: Headers): Promise<ShimResponse> {
    const feed = present(await this.json.get<ChangeLedger>(TREE.changes), TREE.changes);
    const tag = `${feed.etag}|${audience}|${q.limit}|${q.maxLimit}|${q.cursor ?? ''}|${q.from ?? ''}|${q.to ?? ''}`;
    return this.composed(request, changesPage(feed.doc, q, audience), tag, headers);
  }

  /** The covered assets' risk files merged into one envelope, the others named as missing. */
  async bulk(request: ShimRequest, c: Catalog, requested: string[], headers: Headers): Promise<ShimResponse> {
    const found: (RiskDoc | undefined)[] = [];
    const tags: string[] = [];
    for (const s of requested) {
      const canonical = canonicalSymbol(c, s);
      const doc = canonical ? present(await this.json.get<RiskDoc>(TREE.risk(canonical)), TREE.risk(canonical)) : undefined;
      found.push(doc?.doc);
      if (doc) tags.push(doc.etag);
    }
    return this.composed(request, bulkBody(requested, found), `bulk|${requested.join(',')}|${tags.join('|')}`, headers);
  }

  private async composed(request: ShimRequest, body: unknown, tagSource: string, headers: Headers): Promise<ShimResponse> {
    return composedResponse(request, encoder.encode(toJson(body)), await sha256Hex(tagSource), this.compressor, headers);
  }
}

function present<T>(value: T | null | undefined, path: string): T {
  if (value == null) throw new OriginError(`${path}: absent from the origin`);
  return value;
}
