/** What `risk-readings build` takes and reports, and the error that carries its exit status (decision 27). */
import { EXIT } from './exit.js';
import type { Discovery } from './site/discover.js';
import type { ReadingKey } from './site/readings.js';
import type { PageKind } from './site/registry.js';

export interface BuildOptions {
  pages: string;
  out: string;
  /** The previous tree: a folder holding v1/ or the URL of a deployed tree (default: `out`). */
  previous?: string;
  /** Bearer token for a `previous` URL. */
  previousToken?: string;
  catalog?: string;
  now?: string;
  keepGoing?: boolean;
  /** Start a new ledger when there is no previous tree (otherwise that is an error). */
  init?: boolean;
  jobs?: number;
  /** The base URL clients call, the served document's `servers` (default `/`, the origin it is served from). */
  publicUrl?: string;
  /** A JSON file of the served document's contact, licence and terms of service (`--api-info`). */
  apiInfo?: string;
  /** Called as the pages are read: how many of those to read are done. */
  progress?: (done: number, total: number) => void;
}

/** A reading this build could not read and carried forward from the previous tree (--keep-going). */
export interface CarriedPage {
  file: string;
  kind: PageKind;
  symbol: string | null;
  reason: 'missing' | 'unreadable';
  /** The readings it keeps from the previous tree (site/readings.ts); one the previous tree lacked is a warning. */
  readings: ReadingKey[];
}

export interface BuildReport {
  assets: number;
  /** The pages found; each is parsed, reused (unchanged since the previous build) or unreadable: the three add up. */
  pages_read: number;
  pages_parsed: number;
  pages_reused: number;
  /** Pages that could not be read, or whose reading a guard refused (each named in `errors`). */
  pages_unreadable: number;
  files_written: number;
  sector_sources: Record<string, string | null>;
  warnings: string[];
  errors: string[];
  ignored: string[];
  /** Files hard-linked from the previous tree instead of written. */
  files_linked: number;
  /** Pages whose previous readings were carried forward (--keep-going); the build then exits 4. */
  carried: CarriedPage[];
  /**
   * A build that failed for pages it could not read or find publishes nothing and carries nothing: what it would have
   * carried with --keep-going. Absent from a build that published.
   */
  would_carry?: CarriedPage[];
  /** Where the ledger was continued from (a folder or URL), or null for a new ledger (--init). */
  previous: string | null;
  /** What killed builds had left in --out and this build removed or recovered. */
  tidied: string[];
  /** True for an idle rebuild: nothing read had changed, so the previous tree was re-linked whole (idle.ts). */
  relinked: boolean;
  /** Milliseconds per step (read, plan, publish), for benchmarks; never written to the tree. */
  timings: Record<string, number>;
}

export class BuildError extends Error {
  constructor(
    message: string,
    readonly report: Partial<BuildReport>,
    readonly problems: string[],
    readonly exitCode: number = EXIT.input,
  ) {
    super(message);
  }
}

/** What the report says of the inputs, whatever came of them. */
interface Read {
  catalog: unknown[];
  found: Discovery;
  previous: { source: string } | null;
  warnings: string[];
  tidied: string[];
}

/** The build's report, from what it read and what it got as far as it got: the one place it is assembled. */
export function buildReport(
  read: Read,
  got: {
    site?: { parsed: number; reused: number; errors?: ReadonlyMap<string, unknown> };
    errors?: string[];
    carried?: CarriedPage[];
    /** The build failed: what it would have carried with --keep-going (decision 89). */
    wouldCarry?: CarriedPage[];
    published?: { files: number; linked: number };
    sectorSources?: Record<string, string | null>;
    /** Warnings beyond those of reading the inputs (the plan's, the cache's). */
    warnings?: string[];
    relinked?: boolean;
  },
): Partial<BuildReport> {
  return {
    previous: read.previous ? read.previous.source : null,
    tidied: read.tidied,
    assets: read.catalog.length,
    pages_read: read.found.pages.length,
    pages_parsed: got.site?.parsed ?? 0,
    pages_reused: got.site?.reused ?? 0,
    pages_unreadable: got.site?.errors?.size ?? 0,
    warnings: [...read.warnings, ...(got.warnings ?? [])],
    errors: got.errors ?? [],
    ignored: read.found.ignored,
    carried: got.carried ?? [],
    ...(got.wouldCarry && { would_carry: got.wouldCarry }),
    ...(got.published && { files_written: got.published.files, files_linked: got.published.linked }),
    ...(got.sectorSources && { sector_sources: got.sectorSources }),
    ...(got.relinked !== undefined && { relinked: got.relinked }),
  };
}
