/** Values that may be promises: chained synchronously while they are not, as promises once they are. */
import { describe, expect, it } from 'vitest';
import { next, recovering } from '../../auth-shim/maybe.js';

describe('maybe', () => {
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
