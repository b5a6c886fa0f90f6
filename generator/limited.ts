/** `fn` over `items`, at most `limit` running at once: bounded work in flight, bounded memory. */
import pLimit from 'p-limit';

export async function forEachLimited<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  await pLimit(limit).map(items, fn);
}
