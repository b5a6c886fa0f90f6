/**
 * A tree's files, handed over one by one as the build plans them: each is serialised, hashed against the
 * previous tree, checked against its schema, and, when it changed, handed to the staging thread, which writes
 * and compresses it on the other core while the build still reads pages. `finish` lends what did not change,
 * checks the rules across files and publishes the tree whole; a tree that breaks the contract is discarded with
 * its staging folder, so nothing of it is ever seen.
 */
import { ENCODING_SUFFIX, ENCODINGS, hasVariants, type Encoding } from '../contract/encodings.js';
import { jsonWriter, toJson } from '../contract/json.js';
import { digest, manifest, sha256, type Digest, type Manifest, type ManifestEntry } from './manifest.js';
import { TreeValidator } from './validate.js';
import { manifestSizes, reusable, StagedTree } from './write-tree.js';

/** What the writer takes from the previous tree. */
export interface PreviousFiles {
  manifest: Manifest;
  /** The folder holding its files when it is on this machine: unchanged files are hard-linked from it. */
  tree: string | null;
}

/** The tree breaks the contract; the staging folder is gone. */
export class TreeInvalid extends Error {
  constructor(readonly problems: string[]) {
    super(`the tree breaks the contract in ${problems.length} place(s)`);
  }
}

const variantPath = (path: string, e: Encoding) => path + ENCODING_SUFFIX[e];

export class TreeWriter {
  /** Every document handed over, by path, in the order given: the rules across files read them. */
  readonly objects = new Map<string, unknown>();
  private readonly entries = new Map<string, ManifestEntry>();
  /** Files byte-identical to the previous tree's, kept until `finish` knows whether that tree can lend them. */
  private readonly unchanged = new Map<string, Uint8Array>();
  private readonly problems: string[] = [];
  /** Each changed file's staging, done when it and its variants are written. */
  private readonly staging: Promise<void>[] = [];

  private constructor(
    private readonly staged: StagedTree,
    /** The SHA-256 of the contract document: files are compared with the previous tree's only under the same one. */
    private readonly contract: string,
    private readonly validator: TreeValidator,
    private readonly serialize: (doc: unknown) => Uint8Array,
    private readonly previous: PreviousFiles | undefined,
  ) {}

  static async open(out: string, contractDoc: object, previous?: PreviousFiles): Promise<TreeWriter> {
    const contract = sha256(toJson(contractDoc));
    // Rows carried from the previous tree's ledgers passed this same contract when they were published.
    const validator = new TreeValidator(contractDoc, { carriedVouched: previous?.manifest.contract === contract });
    return new TreeWriter(await StagedTree.open(out), contract, validator, jsonWriter(), previous);
  }

  /** One document of the tree (each path once); its writing and compression start now. */
  add(path: string, doc: unknown): void {
    const bytes = this.serialize(doc);
    const entry: ManifestEntry = digest(bytes);
    this.objects.set(path, doc);
    this.entries.set(path, entry);
    const before = this.previous?.manifest;
    const same = before?.contract === this.contract && before.files[path]?.sha256 === entry.sha256;
    this.problems.push(...this.validator.file(path, doc, same));
    if (same) {
      this.unchanged.set(path, bytes);
      return;
    }
    this.stage(path, bytes, entry, { file: true, variants: hasVariants(path, entry.size) });
  }

  /** Writes the file and makes its variants, as asked, on the staging thread. The bytes are handed over. */
  private stage(path: string, bytes: Uint8Array, entry: ManifestEntry, what: { file: boolean; variants: boolean }): void {
    if (!what.file && !what.variants) return;
    const staged = this.staged.stage(path, bytes, what);
    const done = staged.then((encodings) => void (encodings && (entry.encodings = encodings)));
    // Awaited by finish; a build that fails before then must not die of an unhandled rejection.
    done.catch(() => {});
    this.staging.push(done);
  }

  /**
   * Checks the rules across files, lends the unchanged files (and their variants) the previous tree still holds
   * intact, writes the rest, then the manifest, and swaps the tree in. `lap` marks the stages for benchmarks.
   */
  async finish(
    builtAt: string,
    pages: string[],
    lap: (stage: string) => void = () => {},
  ): Promise<{ linked: number; files: number; manifest: Manifest }> {
    try {
      const problems = this.problems.length ? this.problems : this.validator.tree(this.objects);
      lap('validate');
      if (problems.length) throw new TreeInvalid(problems);
      const lend = await this.lendable();
      for (const [path, bytes] of this.unchanged) {
        const entry = this.entries.get(path)!;
        let variants = hasVariants(path, entry.size);
        // Variants of an unchanged file are its previous ones, even where the file itself is written again.
        const before = this.previous!.manifest.files[path]?.encodings;
        if (variants && before && ENCODINGS.every((e) => before[e] && lend.has(variantPath(path, e)))) {
          entry.encodings = Object.fromEntries(ENCODINGS.map((e) => [e, before[e]!])) as Record<Encoding, Digest>;
          variants = false;
        } else for (const e of ENCODINGS) lend.delete(variantPath(path, e));
        this.stage(path, bytes, entry, { file: !lend.has(path), variants });
      }
      await Promise.all(this.staging);
      lap('compress');
      const tree = manifest(this.entries, builtAt, pages, this.contract);
      const reuse = this.previous?.tree ? { tree: this.previous.tree, paths: lend } : undefined;
      return { ...(await this.staged.publish(toJson(tree), builtAt, reuse)), manifest: tree };
    } catch (e) {
      await this.discard();
      throw e;
    }
  }

  /** Which unchanged files, and variants of theirs, the previous tree can lend (see `reusable`). */
  private async lendable(): Promise<Set<string>> {
    const prev = this.previous;
    if (!prev?.tree || this.unchanged.size === 0) return new Set();
    const sizes = manifestSizes(prev.manifest);
    const candidates = new Map<string, number>();
    for (const path of this.unchanged.keys())
      for (const p of [path, ...ENCODINGS.map((e) => variantPath(path, e))]) if (sizes.has(p)) candidates.set(p, sizes.get(p)!);
    return reusable(prev.tree, candidates);
  }

  /** Leaves no trace of this tree. */
  async discard(): Promise<void> {
    await this.staged.discard();
  }
}
