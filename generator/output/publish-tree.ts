/**
 * Publishes a planned tree: serialise every document, validate the whole tree, hard-link from the previous tree
 * each file (and compressed variant) whose bytes it already holds, write and compress the rest into a staging
 * folder, write the manifest last and swap the tree in (live-tree.ts). Any failure discards the staging folder,
 * so nothing of a failed tree is ever seen.
 */
import { copyFileSync, linkSync, mkdirSync, writeFileSync } from 'node:fs';
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

async function publishWith(i: PublishInputs, zip: Compressor): Promise<Published> {
  const before = i.previous?.manifest.files ?? {};
  const bytes = new Map<string, Buffer>();
  const entries = new Map<string, ManifestEntry>();
  const problems: string[] = [];
  const schema = compileSchemas(i.contract);
  // Each changed file's variants are made on another thread while this one serialises and validates the rest.
  const variants = new Map<string, Promise<Buffer[]>>();
  const compressed = (path: string) => {
    if (!variants.has(path)) variants.set(path, zip.variants(bytes.get(path)!));
    return variants.get(path)!;
  };
  for (const [path, doc] of i.objects) {
    const b = Buffer.from(toJson(doc));
    const entry = digest(b);
    bytes.set(path, b);
    entries.set(path, entry);
    problems.push(...fileProblems(schema, path, doc));
    if (hasVariants(path, entry.size) && before[path]?.sha256 !== entry.sha256) void compressed(path).catch(() => {});
  }
  if (!problems.length) problems.push(...treeProblems(i.objects));
  if (problems.length) throw new TreeInvalid(problems);

  const unchanged = [...entries].filter(([path, e]) => before[path]?.sha256 === e.sha256).map(([path]) => path);
  const lent = await lendable(i.previous, unchanged);
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
    for (const [path, entry] of entries) {
      place(path, lent.has(path) ? null : bytes.get(path)!);
      if (!hasVariants(path, entry.size)) continue;
      // An unchanged file's variants are the previous tree's, lent with it where it still holds them intact.
      const previous = before[path]?.encodings;
      if (previous && ENCODINGS.every((e) => lent.has(variantPath(path, e)))) {
        entry.encodings = previous;
        for (const e of ENCODINGS) place(variantPath(path, e), null);
        continue;
      }
      const made = await compressed(path);
      entry.encodings = Object.fromEntries(ENCODINGS.map((e, k) => [e, digest(made[k]!)])) as Record<Encoding, Digest>;
      ENCODINGS.forEach((e, k) => place(variantPath(path, e), made[k]!));
    }
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

/** Which of `paths`, and their compressed variants, the previous tree can lend (see `reusable`). */
async function lendable(previous: PublishInputs['previous'], paths: string[]): Promise<Set<string>> {
  if (!previous?.tree || paths.length === 0) return new Set();
  const sizes = manifestSizes(previous.manifest);
  const candidates = new Map<string, number>();
  for (const path of paths)
    for (const p of [path, ...ENCODINGS.map((e) => variantPath(path, e))]) if (sizes.has(p)) candidates.set(p, sizes.get(p)!);
  return reusable(previous.tree, candidates);
}

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
    const st = await stat(join(tree, path)).catch(() => null);
    if (st && st.size === size && st.mtimeMs <= manifestMtime) out.add(path);
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
