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

export const PARSERS: Record<PageKind, (text: string, file: string) => PageResult> = {
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
