/**
 * What a page kind is, in one object (decision 64): where the site publishes it, what it yields, how its dates are guarded and
 * how it is read. Each kind is one module under `site/kinds/`, named after the kind, and one line of the registry
 * (`site/registry.ts`); discovery, the read step, the guards, the plan and the API derive everything from these
 * (docs/architecture.md, "Adding a page kind").
 */
import type { Parsed, ParsedPage, ReadingKey } from './readings.js';

/**
 * `archive`: mine the page's whole series for weekly history rows. Only an asset whose ledger starts needs them;
 * without it a parser reads the readings and leaves the series' past alone.
 */
export interface ParseOptions {
  archive: boolean;
}

/**
 * The page of each asset of a class that has one of the kind's readings (its catalogue entry lists the reading's
 * model, or the reading is one of its own: site/readings.ts), under one of `files(id)`.
 */
interface AssetPages {
  by: 'asset';
  assetClass: 'CRYPTO' | 'EQUITY' | 'ANY';
  /** Its file names for a file id, as the site spells them, preferred first. */
  files: (id: string) => string[];
}

/** A market-wide page: the same file names whatever the catalogue holds. */
interface MarketPages {
  by: 'market';
  files: readonly string[];
}

export interface PageKindDescriptor<K extends string = string> {
  /** The kind's name: the registry's key, and the asset list's `pages` key. */
  name: K;
  published: AssetPages | MarketPages;
  /** The readings its parser yields; when the page fails under --keep-going, these are carried from the previous tree. */
  readings: readonly ReadingKey[];
  /** Whether its series are mined for the weekly archive of an asset whose ledger starts. */
  archive: boolean;
  /**
   * How far past `--now` its dates may run: a day for a daily page; a week for a weekly one, whose bars the site
   * labels by the end of the week in progress. The guard checks every date among its readings.
   */
  cadence: 'daily' | 'weekly';
  /** Reads the page's bytes: most of a page is chart data read in place, never decoded as text. */
  parse: (page: Buffer, file: string, options: ParseOptions) => ParsedPage;
}

/** A descriptor whose parser must yield every reading it declares (checked by the compiler). */
export function defineKind<const K extends string, const R extends ReadingKey>(
  d: Omit<PageKindDescriptor<K>, 'readings' | 'parse'> & {
    readings: readonly R[];
    parse: (page: Buffer, file: string, options: ParseOptions) => Parsed<R>;
  },
): PageKindDescriptor<K> {
  return d;
}
