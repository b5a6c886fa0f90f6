/**
 * Values that may be promises: a stepped generator runs synchronously while nothing it waits on is a promise, and
 * like an async function once something is (its value handed back, its rejection thrown where it waited).
 */
import { describe, expect, it } from 'vitest';
import { next, recovering, stepped } from '../../auth-shim/maybe.js';

function* sum(a: unknown, b: unknown): Generator<unknown, number, unknown> {
  const x = (yield a) as number;
  const y = (yield b) as number;
  return x + y;
}

describe('maybe', () => {
  it('a stepped run with nothing to wait on answers at once', () => {
    expect(stepped(sum(1, 2))).toBe(3);
  });

  it('a stepped run waits for what is a promise, and goes on with its value', async () => {
    const r = stepped(sum(1, Promise.resolve(2)));
    expect(r).toBeInstanceOf(Promise);
    expect(await r).toBe(3);
  });

  it('a rejection is thrown where the run waited: caught there, the run goes on', async () => {
    function* guarded(): Generator<unknown, string, unknown> {
      try {
        yield Promise.reject(new Error('away'));
        return 'not reached';
      } catch (e) {
        return `caught ${(e as Error).message}, then ${(yield 'more') as string}`;
      }
    }
    expect(await stepped(guarded())).toBe('caught away, then more');
    await expect(stepped(sum(Promise.reject(new Error('lost')), 1))).rejects.toThrow('lost');
  });

  it('next and recovering keep a value that is not a promise out of the microtask queue', async () => {
    expect(next(2, (v) => v * 3)).toBe(6);
    expect(await next(Promise.resolve(2), (v) => v * 3)).toBe(6);
    expect(
      recovering(
        () => {
          throw new Error('x');
        },
        () => 'recovered',
      ),
    ).toBe('recovered');
    expect(
      await recovering(
        () => Promise.reject(new Error('x')),
        () => 'recovered',
      ),
    ).toBe('recovered');
  });
});
