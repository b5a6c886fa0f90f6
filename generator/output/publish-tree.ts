/**
 * Publishes a planned tree into a staging folder, one document at a time: serialise it, validate it, hard-link it
 * from the previous tree where that holds its bytes already (and its compressed variants), else write it and have
 * its variants made; then the rules across files, the manifest last, and the swap (live-tree.ts). A document's
 * bytes are dropped once written, so the build's memory does not grow with the tree's bytes. Any failure (a file
 * that breaks the contract included) discards the staging folder, so nothing of a failed tree is ever seen.
 */
import { copyFileSync, linkSync, mkdirSync, statSync, writeFileSync, type Stats } from 'node:fs';
import { stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ENCODING_SUFFIX, ENCODINGS, hasVariants, type Encoding } from '../contract/encodings.js';
import { toJson } from '../contract/json.js';
import { TREE } from '../contract/tree.js';
import { forEachLimited } from '../limited.js';
import { compressor, type Compressor } from './compressor.js';
import { discardStaging, newStaging, publish } from './live-tree.js';
import { digest, manifest, sha256, type Digest, type Manifest, type ManifestEntry } from './manifest.js';
import { compileSchemas, fileProblems, treeProblems } from './validate.js';

/** What a tree is published from. */
export interface PublishInputs {
  out: string;
  /** Every document of the tree but the manifest, by path. */
  objects: ReadonlyMap<string, unknown>;
  /** The closed contract document: the tree is validated against it, and the manifest names its hash. */
  contract: object;
  builtAt: string;
  /** The pages the tree answers for (the manifest lists them for the next build's guard). */
  pages: string[];
  /** The previous tree: its manifest, and the folder holding its files when it is on this machine. */
  previous?: { manifest: Manifest; tree: string | null };
}

export interface Published {
  /** Every file in the tree (written or lent), compressed variants and the manifest included. */
  files: number;
  /** Files hard-linked from the previous tree. */
  linked: number;
  manifest: Manifest;
}

/** The tree breaks the contract; nothing was written. */
export class TreeInvalid extends Error {
  constructor(readonly problems: string[]) {
    super(`the tree breaks the contract in ${problems.length} place(s)`);
  }
}

const variantPath = (path: string, e: Encoding) => path + ENCODING_SUFFIX[e];

export async function publishTree(i: PublishInputs): Promise<Published> {
  const zip = compressor();
  try {
    return await publishWith(i, zip);
  } finally {
    await zip.close();
  }
}

/**
 * The most bytes handed to the compression thread and not yet back. Each file is written as soon as it is
 * serialised and checked, so the build holds no copy of the tree; only the files waiting for their variants are
 * held, and this bounds them (the thread may compress more slowly than this one serialises).
 */
const COMPRESSING_MAX_BYTES = 2 * 2 ** 20;

async function publishWith(i: PublishInputs, zip: Compressor): Promise<Published> {
  const before = i.previous?.manifest.files ?? {};
  const entries = new Map<string, ManifestEntry>();
  const problems: string[] = [];
  const schema = compileSchemas(i.contract);
  const canLend = lender(i.previous);
  const staging = await newStaging(i.out);
  try {
    const folders = new Set<string>();
    let linked = 0;
    /** Writes the file, or lends it from the previous tree when `data` is null. */
    const place = (path: string, data: Uint8Array | null) => {
      const file = join(staging, path);
      const folder = dirname(file);
      if (!folders.has(folder)) mkdirSync(folder, { recursive: true });
      folders.add(folder);
      if (data) writeNamed(file, data);
      else if (lend(join(i.previous!.tree!, path), file)) linked++;
    };
    // Files whose variants the compression thread is making, oldest first, and their bytes in all.
    const compressing: { path: string; entry: ManifestEntry; size: number; made: Promise<Buffer[]> }[] = [];
    let compressingBytes = 0;
    const settleOldest = async () => {
      const { path, entry, size, made } = compressing.shift()!;
      compressingBytes -= size;
      const variants = await made;
      entry.encodings = Object.fromEntries(ENCODINGS.map((e, k) => [e, digest(variants[k]!)])) as Record<Encoding, Digest>;
      ENCODINGS.forEach((e, k) => place(variantPath(path, e), variants[k]!));
    };
    for (const [path, doc] of i.objects) {
      const b = Buffer.from(toJson(doc));
      const entry: ManifestEntry = digest(b);
      entries.set(path, entry);
      problems.push(...fileProblems(schema, path, doc));
      // A tree that breaks the contract is never published: past its first problem, only the problems are collected.
      if (problems.length) continue;
      const unchanged = before[path]?.sha256 === entry.sha256;
      place(path, unchanged && canLend(path, entry.size) ? null : b);
      if (!hasVariants(path, entry.size)) continue;
      // An unchanged file's variants are the previous tree's, lent with it where it still holds them intact.
      const previous = before[path]?.encodings;
      if (unchanged && previous && ENCODINGS.every((e) => canLend(variantPath(path, e), previous[e]!.size))) {
        entry.encodings = previous;
        for (const e of ENCODINGS) place(variantPath(path, e), null);
        continue;
      }
      const made = zip.variants(b);
      // Awaited in turn; one that fails while another is awaited must not go unhandled meanwhile.
      made.catch(() => {});
      compressing.push({ path, entry, size: b.byteLength, made });
      compressingBytes += b.byteLength;
      while (compressingBytes > COMPRESSING_MAX_BYTES) await settleOldest();
    }
    if (!problems.length) problems.push(...treeProblems(i.objects));
    if (problems.length) throw new TreeInvalid(problems);
    while (compressing.length) await settleOldest();
    const tree = manifest(entries, i.builtAt, i.pages, sha256(toJson(i.contract)));
    writeNamed(join(staging, TREE.manifest), toJson(tree));
    await publish(i.out, staging, i.builtAt);
    return { files: countFiles(tree), linked, manifest: tree };
  } catch (e) {
    await discardStaging(staging);
    throw e;
  }
}

/**
 * The previous tree as the new one, unchanged but for the manifest's build time (an idle rebuild): every file is
 * lent from it. Null when the previous tree no longer holds every file its manifest lists, intact.
 */
export async function relinkTree(out: string, tree: string, previous: Manifest, builtAt: string): Promise<Published | null> {
  const sizes = manifestSizes(previous);
  const paths = await reusable(tree, sizes);
  if (paths.size !== sizes.size) return null;
  const staging = await newStaging(out);
  try {
    let linked = 0;
    for (const path of paths) {
      mkdirSync(dirname(join(staging, path)), { recursive: true });
      if (lend(join(tree, path), join(staging, path))) linked++;
    }
    const next = { ...previous, built_at: builtAt };
    writeNamed(join(staging, TREE.manifest), toJson(next));
    await publish(out, staging, builtAt);
    return { files: paths.size + 1, linked, manifest: next };
  } catch (e) {
    await discardStaging(staging);
    throw e;
  }
}

/**
 * Whether the previous tree can lend a file of this size (see `reusable`): asked once per unchanged file, as the
 * build reaches it.
 */
function lender(previous: PublishInputs['previous']): (path: string, size: number) => boolean {
  if (!previous?.tree) return () => false;
  const tree = previous.tree;
  const manifestMtime = statSync(join(tree, TREE.manifest), { throwIfNoEntry: false })?.mtimeMs ?? -Infinity;
  const sizes = manifestSizes(previous.manifest);
  return (path, size) => sizes.get(path) === size && intact(statSync(join(tree, path), { throwIfNoEntry: false }), size, manifestMtime);
}

/** A file is trusted only if its size matches and it is no newer than its manifest (written last): not edited by hand. */
const intact = (st: Stats | undefined, size: number, manifestMtime: number) => !!st && st.size === size && st.mtimeMs <= manifestMtime;

/** Every file a manifest lists, compressed variants included, with its size: what `reusable` checks. */
function manifestSizes(m: Manifest): Map<string, number> {
  const sizes = new Map<string, number>();
  for (const [path, e] of Object.entries(m.files)) {
    sizes.set(path, e.size);
    for (const [enc, d] of Object.entries(e.encodings ?? {})) sizes.set(path + ENCODING_SUFFIX[enc as Encoding], d!.size);
  }
  return sizes;
}

/**
 * Which of `candidates` (paths with their size in the previous manifest) the previous tree can lend. A file is
 * trusted only if its size matches and it is no newer than the previous manifest (written last), so a file edited
 * by hand is made again.
 */
async function reusable(tree: string, candidates: Map<string, number>): Promise<Set<string>> {
  const manifestMtime = await stat(join(tree, TREE.manifest)).then(
    (s) => s.mtimeMs,
    () => -Infinity,
  );
  const out = new Set<string>();
  await forEachLimited([...candidates], 64, async ([path, size]) => {
    if (intact(await stat(join(tree, path)).catch(() => undefined), size, manifestMtime)) out.add(path);
  });
  return out;
}

/**
 * writeFileSync, whose failure names the file: a failed write() (ENOSPC, EIO) carries no path of its own. Files are
 * written synchronously: a build has nothing else for this thread to do, and each file costs one call, not an open,
 * a write and a close each through the thread pool.
 */
export function writeNamed(file: string, data: string | Uint8Array): void {
  try {
    writeFileSync(file, data);
  } catch (e) {
    (e as NodeJS.ErrnoException).path ??= file;
    throw e;
  }
}

/** A hard link, or a copy where links cannot be made (another filesystem); whether it linked. */
function lend(from: string, to: string): boolean {
  try {
    linkSync(from, to);
    return true;
  } catch {
    copyFileSync(from, to);
    return false;
  }
}

const countFiles = (m: Manifest) => Object.values(m.files).reduce((n, e) => n + 1 + Object.keys(e.encodings ?? {}).length, 1);
