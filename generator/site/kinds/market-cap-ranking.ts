/** `Crypto_Story_Galaxy.html`: the crypto market-cap ranking (strict-JSON records in a script), which makes the free tier. */
import { z } from 'zod';
import { MarketCapRank } from '../../contract/shapes.js';
import { PageError } from '../errors.js';
import { defineKind } from '../kind.js';
import { validated } from '../readings.js';

// The rank on the contract's bounds (decision 101), as AssetRisk.market_cap_rank publishes it.
const RankRecord = z.object({ Ticker: z.string().min(1), Market_Cap_Rank: MarketCapRank });

export const marketCapRanking = defineKind({
  name: 'market_cap_ranking',
  published: { by: 'market', files: ['Crypto_Story_Galaxy.html'] },
  readings: ['ranking'],
  archive: false,
  cadence: 'daily',
  parse(page, file) {
    const html = page.toString('utf8');
    const at = html.indexOf('const rawData');
    if (at < 0) throw new PageError(file, 'rawData', 'no `const rawData = [...]` on the page');
    const start = html.indexOf('[', at);
    const stop = html.indexOf('const dcaRawBundle', start);
    const body = html
      .slice(start, stop < 0 ? undefined : stop)
      .trim()
      .replace(/;\s*$/, '');
    let records: unknown;
    try {
      records = JSON.parse(body);
    } catch (e) {
      throw new PageError(file, 'rawData', `not strict JSON (${(e as Error).message})`);
    }
    const list = validated(z.array(RankRecord), records, file, 'rawData');
    return { ranking: list.map((r) => ({ symbol: r.Ticker, rank: r.Market_Cap_Rank })) };
  },
});
