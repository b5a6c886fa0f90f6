/** Progress on stderr: a line rewritten in place on a terminal, nothing at all anywhere else. */
import { describe, expect, it } from 'vitest';
import { progress } from '../../../generator/commands/progress.js';

const sink = (isTTY: boolean) => {
  const written: string[] = [];
  return { isTTY, written, write: (s: string) => written.push(s) };
};

describe('progress', () => {
  it('on a terminal: the count rewritten in place, the last one always shown, the line cleared at the end', () => {
    const s = sink(true);
    const p = progress('reading pages', s);
    for (let i = 1; i <= 500; i++) p(i, 500);
    expect(s.written[0]).toBe('\rreading pages 1/500\x1b[K');
    expect(s.written.at(-1)).toBe('\rreading pages 500/500\x1b[K');
    // Throttled: a tight loop does not write a line per step.
    expect(s.written.length).toBeLessThan(50);
    p.end();
    expect(s.written.at(-1)).toBe('\r\x1b[K');
  });

  it('into a pipe or a log: nothing, not even the clearing', () => {
    const s = sink(false);
    const p = progress('reading pages', s);
    for (let i = 1; i <= 10; i++) p(i, 10);
    p.end();
    expect(s.written).toEqual([]);
  });
});
