/**
 * One writer per output folder: `<out>/.lock` (and one process per quota file, `<file>.lock`), created with O_EXCL and holding its holder (pid, host, process
 * start time, command, its own path). A lock whose holder is a process of this host that no longer runs is stale and
 * taken over at once, so a pipeline that retries a killed build does not wait for a timeout; so is one copied from
 * another place (a tree or a quota database copied whole while a process held it), which no process holds here.
 *
 * Written here rather than taken from proper-lockfile: that library records no holder (the second build must
 * name it) and tells staleness only by an mtime its holder keeps touching, so a build killed with SIGKILL would
 * block its retry for the stale period.
 */
import { readFileSync, realpathSync } from 'node:fs';
import { open, readFile, stat, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';

const LOCK_FILE = '.lock';

export interface LockHolder {
  pid: number;
  host: string;
  started: string;
  proc_start: string | null;
  command: string;
  /** The lock's own path (its folder's real path): a lock copied to another place (a tree copied whole) is not held. */
  path?: string;
}

export class LockHeld extends Error {
  constructor(
    readonly path: string,
    readonly holder: LockHolder | null,
    /** What holding it means, for the message: `another build holds the output`. */
    held = 'another build holds the output',
  ) {
    super(
      holder
        ? `${path}: ${held} (pid ${holder.pid} on ${holder.host}, since ${holder.started}: ${holder.command})`
        : `${path}: ${held} (its lock file names no holder yet)`,
    );
  }
}

export interface Lock {
  path: string;
  release(): Promise<void>;
}

/** The kernel's start time of a process (Linux), so a pid reused by another program is not taken for the holder. */
function procStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/** Whether the process a holder names still runs (on this host; one on another cannot be asked, so it does). */
export function holderAlive(h: LockHolder): boolean {
  return h.host !== hostname() || alive(h);
}

/** Whether a process `pid` runs on this machine (another user's too). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function alive(h: LockHolder): boolean {
  if (!pidAlive(h.pid)) return false;
  const now = procStart(h.pid);
  return h.proc_start === null || now === null || now === h.proc_start;
}

async function readHolder(path: string): Promise<LockHolder | null> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as LockHolder;
  } catch {
    return null;
  }
}

/** Create `path` only if absent, with `text` in it; false when it exists. */
async function createExclusive(path: string, text: string): Promise<boolean> {
  let fh;
  try {
    fh = await open(path, 'wx');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  }
  try {
    await fh.writeFile(text);
  } catch (e) {
    // A lock that names no holder blocks every build for a grace period: a failed write (a full disk) leaves none.
    await fh.close().catch(() => {});
    await unlink(path).catch(() => {});
    (e as NodeJS.ErrnoException).path ??= path;
    throw e;
  }
  await fh.close();
  return true;
}

/** A holder that wrote nothing is given this long to finish writing before its lock counts as stale. */
const UNNAMED_GRACE_MS = 5_000;

/** `path` with its folder's symlinks resolved, so every name of one lock compares equal. */
function realLockPath(path: string): string {
  try {
    return join(realpathSync(dirname(path)), basename(path));
  } catch {
    return resolve(path);
  }
}

async function isStale(path: string, holder: LockHolder | null): Promise<boolean> {
  // Made for another path: a copy when its holder still holds that one (a tree copied whole); else it moved here
  // with its folder (a tree renamed while served), and its holder's counts with it.
  if (holder?.path !== undefined && holder.path !== realLockPath(path)) {
    const there = await readHolder(holder.path);
    if (there?.pid === holder.pid && there.host === holder.host && there.started === holder.started) return true;
  }
  if (holder) return holder.host === hostname() && !alive(holder);
  const st = await stat(path).catch(() => null);
  return st !== null && Date.now() - st.mtimeMs > UNNAMED_GRACE_MS;
}

/** The output folder's lock: one build at a time writes `dir`. */
export const acquireLock = (dir: string, command: string): Promise<Lock> => lockFile(join(dir, LOCK_FILE), command);

/** This process as the holder of a lock at `path`, for `command`. */
export const holderOf = (path: string, command: string): LockHolder => ({
  pid: process.pid,
  host: hostname(),
  started: new Date().toISOString(),
  proc_start: procStart(process.pid),
  command,
  path: realLockPath(path),
});

/** The lock `path`, for `command`; LockHeld (saying `held`) when a live process holds it. */
export async function lockFile(path: string, command: string, held?: string): Promise<Lock> {
  const me = holderOf(path, command);
  const text = JSON.stringify(me) + '\n';
  const release = async () => {
    const h = await readHolder(path);
    if (h?.pid === me.pid && h.host === me.host) await unlink(path).catch(() => {});
  };
  if (await createExclusive(path, text)) return { path, release };
  const holder = await readHolder(path);
  if (!(await isStale(path, holder))) throw new LockHeld(path, holder, held);
  // Breaking a stale lock is itself serialised by a second exclusive file, so two builds that both find the
  // lock stale cannot both remove it and both go on to write.
  const breaker = `${path}.break`;
  if (!(await createExclusive(breaker, text))) {
    const b = await readHolder(breaker);
    if (b && b.host === me.host && !alive(b)) await unlink(breaker).catch(() => {});
    throw new LockHeld(path, holder, held);
  }
  try {
    const again = await readHolder(path);
    if (JSON.stringify(again) !== JSON.stringify(holder) || !(await isStale(path, again))) throw new LockHeld(path, again, held);
    await unlink(path).catch(() => {});
    if (!(await createExclusive(path, text))) throw new LockHeld(path, await readHolder(path), held);
  } finally {
    await unlink(breaker).catch(() => {});
  }
  return { path, release };
}
