/**
 * Progress on stderr while a long step runs, only when stderr is a terminal: one line rewritten in place (at most
 * ten times a second), cleared when the step ends, so logs and pipes see none of it.
 */
export interface Progress {
  (done: number, total: number): void;
  /** Clears the line. */
  end(): void;
}

export function progress(label: string, stream: { isTTY?: boolean; write(s: string): unknown } = process.stderr): Progress {
  let last = 0;
  let shown = false;
  const update = ((done: number, total: number) => {
    if (!stream.isTTY) return;
    const now = Date.now();
    if (done < total && now - last < 100) return;
    last = now;
    shown = true;
    stream.write(`\r${label} ${done}/${total}\x1b[K`);
  }) as Progress;
  update.end = () => {
    if (shown) stream.write('\r\x1b[K');
    shown = false;
  };
  return update;
}
