/** Which parser reads which page kind. */
import { parseCryptoGravity } from './pages/crypto-gravity.js';
import { parseCryptoSma } from './pages/crypto-sma.js';
import { parseCryptoTwapRisk } from './pages/crypto-twap-risk.js';
import { parseDca } from './pages/dca.js';
import { parseEquityComposite } from './pages/equity-composite.js';
import { parseEquityTwap } from './pages/equity-twap.js';
import { parseCryptoFearGreed, parseCryptoPeakValley, parseRanking, parseSectorFeed, parseSectorWidget } from './pages/market.js';
import { parseCryptoPhase, parseEquityValuation } from './pages/phase.js';
import type { PageKind, PageResult } from './readings.js';

/**
 * `archive`: mine the page's whole series for weekly history rows. Only an asset whose ledger starts needs
 * them; without it a parser reads the readings and leaves the series' past alone.
 */
export interface ParseOptions {
  archive: boolean;
}
/** A parser reads the page's bytes: most of a page is chart data read in place, never decoded as text. */
export type Parser = (page: Buffer, file: string, options?: ParseOptions) => PageResult;

export const PARSERS: Record<PageKind, Parser> = {
  crypto_gravity: parseCryptoGravity,
  crypto_twap_risk: parseCryptoTwapRisk,
  crypto_sma_20w: parseCryptoSma,
  crypto_phase: parseCryptoPhase,
  dca_regression: parseDca,
  equity_twap: parseEquityTwap,
  equity_sma_composite: parseEquityComposite,
  equity_valuation: parseEquityValuation,
  crypto_fear_greed: parseCryptoFearGreed,
  crypto_peak_valley: parseCryptoPeakValley,
  sector_feed: parseSectorFeed,
  sector_widget: parseSectorWidget,
  market_cap_ranking: parseRanking,
};
