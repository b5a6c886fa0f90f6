import { afterAll, onTestFinished } from 'vitest';

/** Runs `done` when the test that calls this ends, or, called outside a test, when the test file ends. */
export function atEnd(done: () => unknown): void {
  // An afterAll registered inside a running test never runs (folders and keys were left behind); outside one,
  // onTestFinished throws. (expect's state cannot tell: it keeps the last test's name where files share a worker.)
  try {
    onTestFinished(async () => void (await done()));
  } catch {
    afterAll(async () => void (await done()));
  }
}
