/** Fixed-window arithmetic of the rate limiter (the counting itself is an integration test). */
import { describe, expect, it } from "vitest";
import { RATE_WINDOW_MS, rateWindowAt, retryAfterSeconds } from "#lib/domain/rate-limit.ts";

const T0 = Date.UTC(2025, 0, 15, 12, 34, 0); // a whole minute

describe("rateWindowAt", () => {
  it("uses one-minute windows", () => {
    expect(RATE_WINDOW_MS).toBe(60_000);
  });

  it("aligns windows to whole minutes", () => {
    expect(rateWindowAt(T0)).toEqual({ start: T0, end: T0 + 60_000 });
    expect(rateWindowAt(T0 + 1)).toEqual({ start: T0, end: T0 + 60_000 });
    expect(rateWindowAt(T0 + 59_999)).toEqual({ start: T0, end: T0 + 60_000 });
    expect(rateWindowAt(T0 + 60_000)).toEqual({ start: T0 + 60_000, end: T0 + 120_000 });
    expect(rateWindowAt(0)).toEqual({ start: 0, end: 60_000 });
  });

  it("honours another window length", () => {
    expect(rateWindowAt(T0 + 3_500, 1_000)).toEqual({ start: T0 + 3_000, end: T0 + 4_000 });
  });
});

describe("retryAfterSeconds", () => {
  const window = rateWindowAt(T0);

  it("is the whole window at its start", () => {
    expect(retryAfterSeconds(T0, window)).toBe(60);
  });

  it("rounds the remaining time up to whole seconds", () => {
    expect(retryAfterSeconds(T0 + 1, window)).toBe(60);
    expect(retryAfterSeconds(T0 + 500, window)).toBe(60);
    expect(retryAfterSeconds(T0 + 1_000, window)).toBe(59);
    expect(retryAfterSeconds(T0 + 30_000, window)).toBe(30);
    expect(retryAfterSeconds(T0 + 30_001, window)).toBe(30);
  });

  it("is 1, never 0, at the end of the window (and past it)", () => {
    expect(retryAfterSeconds(T0 + 59_000, window)).toBe(1);
    expect(retryAfterSeconds(T0 + 59_999, window)).toBe(1);
    expect(retryAfterSeconds(T0 + 60_000, window)).toBe(1);
    expect(retryAfterSeconds(T0 + 75_000, window)).toBe(1);
  });

  it("is always a whole number between 1 and 60 inside a window", () => {
    for (let offset = 0; offset < 60_000; offset += 137) {
      const seconds = retryAfterSeconds(T0 + offset, window);
      expect(Number.isInteger(seconds)).toBe(true);
      expect(seconds).toBeGreaterThanOrEqual(1);
      expect(seconds).toBeLessThanOrEqual(60);
      // Waiting that long always lands in a later window.
      expect(T0 + offset + seconds * 1000).toBeGreaterThanOrEqual(window.end);
    }
  });
});
