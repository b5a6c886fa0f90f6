/**
 * Values that may or may not be promises. The shim's steps answer at once when what they need is in memory (a
 * known key, an in-memory quota store, a file the origin holds) and wait only when it is not (a first hash on Web
 * Crypto, a shared quota store, a cold file): these helpers chain such values without making a promise on the path
 * that has everything, where each promise hop would cost the Node server a share of its request rate (decision 95).
 */
export type Maybe<T> = T | Promise<T>;

/** `then` for a value that may not be a promise. */
export const next = <T, U>(v: Maybe<T>, f: (v: T) => Maybe<U>): Maybe<U> => (v instanceof Promise ? v.then(f) : f(v));

/** `run`, with what it throws or rejects with answered by `recover`. */
export function recovering<T>(run: () => Maybe<T>, recover: (e: unknown) => T): Maybe<T> {
  try {
    const r = run();
    return r instanceof Promise ? r.catch(recover) : r;
  } catch (e) {
    return recover(e);
  }
}
