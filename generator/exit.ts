/**
 * The build's exit statuses, its contract with the pipeline that runs it (decision 27), and the errors that carry
 * them. Every other command uses 0, 1 (its subject failed) and 2 (bad usage) in the same sense.
 */
export const EXIT = {
  /** Published. */
  published: 0,
  /** This input cannot be published (an unreadable page, a guard, a contract violation); nothing changed. */
  input: 1,
  usage: 2,
  /** The environment (another build holds the output, disk full, no permission); nothing changed. */
  environment: 3,
  /** Published with --keep-going, carrying forward readings it could not read. */
  carried: 4,
} as const;

/** A failure of the machine, not of the input: names the path and the cause. */
export class EnvironmentError extends Error {
  constructor(path: string, cause: string) {
    super(`${path}: ${cause}`);
  }
}

const CAUSES: Record<string, string> = {
  ENOSPC: 'disk full',
  EDQUOT: 'disk quota exceeded',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'read-only file system',
  EMFILE: 'too many open files',
  ENFILE: 'too many open files in the system',
  EIO: 'input/output error',
  EBUSY: 'resource busy',
  ENOTDIR: 'a path component is not a folder',
  EEXIST: 'already exists',
  EXDEV: 'crosses filesystems',
};

/** An fs error of the environment as an EnvironmentError naming its path and cause; anything else unchanged. */
export function asEnvironmentError(e: unknown): unknown {
  const err = e as NodeJS.ErrnoException & { dest?: string };
  if (!err || typeof err !== 'object' || typeof err.code !== 'string' || !(err.code in CAUSES)) return e;
  const path = [err.path, err.dest].filter(Boolean).join(' → ') || '(unknown path)';
  return new EnvironmentError(path, `${CAUSES[err.code]} (${err.code}${err.syscall ? `, ${err.syscall}` : ''})`);
}
