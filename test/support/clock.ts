/**
 * A clock for the local stack (`startTestStack({ clock: clock.now })`, lib/clock.ts): the real time
 * plus an offset that only grows, so time still passes, never goes back, and a test can put itself
 * a few seconds into a fresh minute (or skip a TTL) at once instead of waiting for it.
 */

export const MINUTE_MS = 60_000;

export class TestClock {
  private offset = 0;

  /** Milliseconds since the epoch, on this clock. */
  readonly now = (): number => Date.now() + this.offset;

  /** Move the clock forward by `ms`. */
  advance(ms: number): void {
    if (ms < 0) throw new Error("the test clock only moves forward");
    this.offset += ms;
  }

  /**
   * Move to `intoMs` after the start of the next window of `windowMs` (default: the next UTC
   * minute, 1 s in): a burst started now ends in the window it starts in.
   */
  toNextWindow(windowMs = MINUTE_MS, intoMs = 1_000): number {
    const at = this.now();
    this.advance(Math.floor(at / windowMs) * windowMs + windowMs + intoMs - at);
    return this.now();
  }
}
