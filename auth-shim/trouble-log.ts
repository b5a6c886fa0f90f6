/**
 * Trouble said at most once a minute for each kind of it: a store away for an hour is said sixty times, not once per
 * request. Once a kind is `over`, its next trouble is said at once, so a new outage is heard of when it starts.
 */
export class TroubleLog<Kind extends string> {
  private readonly said = new Map<Kind, number>();

  constructor(private readonly log: (m: string) => void) {}

  say(kind: Kind, m: string): void {
    if (Date.now() - (this.said.get(kind) ?? -Infinity) < 60_000) return;
    this.said.set(kind, Date.now());
    this.log(m);
  }

  /** The trouble of this kind is over; returns whether any of it was said. */
  over(kind: Kind): boolean {
    return this.said.delete(kind);
  }
}
