/**
 * Where a bench server counting in the disk store (server.ts, `paid-disk`) keeps its quota file: in its tree, named
 * for its process. A module of its own so that the bench's servers load nothing of its launcher (servers.ts).
 */
import { join } from 'node:path';

export const benchQuotaFile = (tree: string, pid: number): string => join(tree, `.bench-quotas-${pid}.json`);
