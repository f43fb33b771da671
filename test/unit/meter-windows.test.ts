/** Calendar windows, counter keys and thresholds of meters (lib/shared/meter-windows.ts). */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { keys } from "#lib/db/keys.ts";
import {
  type CalendarWindow,
  callerHash,
  counterTtl,
  crossedThreshold,
  effectiveThreshold,
  isExpired,
  METER_WINDOWS,
  retryAfterSeconds,
  windowAt,
  windowLimit,
  windowSeconds,
} from "#lib/shared/meter-windows.ts";

const at = (iso: string) => Date.parse(iso);

describe("windowAt", () => {
  it("minute, hour and day are whole UTC units", () => {
    const now = at("2025-03-09T17:42:31.250Z");
    expect(windowAt("minute", now)).toEqual({
      kind: "minute",
      start: at("2025-03-09T17:42:00Z"),
      end: at("2025-03-09T17:43:00Z"),
    });
    expect(windowAt("hour", now)).toEqual({
      kind: "hour",
      start: at("2025-03-09T17:00:00Z"),
      end: at("2025-03-09T18:00:00Z"),
    });
    expect(windowAt("day", now)).toEqual({
      kind: "day",
      start: at("2025-03-09T00:00:00Z"),
      end: at("2025-03-10T00:00:00Z"),
    });
  });

  it("month is the calendar month in UTC", () => {
    expect(windowAt("month", at("2025-03-09T17:42:31Z"))).toEqual({
      kind: "month",
      start: at("2025-03-01T00:00:00Z"),
      end: at("2025-04-01T00:00:00Z"),
    });
  });

  it("December runs into January of the next year", () => {
    const window = windowAt("month", at("2025-12-31T23:59:59.999Z"));
    expect(window.start).toBe(at("2025-12-01T00:00:00Z"));
    expect(window.end).toBe(at("2026-01-01T00:00:00Z"));
    expect(windowAt("month", window.end).start).toBe(window.end);
  });

  it("February has 29 days in a leap year, 28 otherwise; a century is leap only every 400 years", () => {
    const days = (iso: string) => windowSeconds(windowAt("month", at(iso))) / 86_400;
    expect(days("2024-02-10T00:00:00Z")).toBe(29);
    expect(days("2025-02-10T00:00:00Z")).toBe(28);
    expect(days("2100-02-10T00:00:00Z")).toBe(28);
    expect(days("2000-02-10T00:00:00Z")).toBe(29);
    expect(days("2025-04-30T12:00:00Z")).toBe(30);
    expect(days("2025-07-31T12:00:00Z")).toBe(31);
  });

  it("the start is inclusive and the end exclusive, for every kind", () => {
    for (const kind of METER_WINDOWS) {
      const window = windowAt(kind, at("2024-02-29T23:59:59.999Z"));
      expect(windowAt(kind, window.start)).toEqual(window);
      expect(windowAt(kind, window.end - 1)).toEqual(window);
      expect(windowAt(kind, window.end).start).toBe(window.end);
      expect(windowAt(kind, window.start - 1).end).toBe(window.start);
    }
  });

  it("does not depend on the process time zone (local midnight is not a window edge)", () => {
    // 2025-03-30 is a DST change in Europe; the UTC day is still 24 h.
    expect(windowSeconds(windowAt("day", at("2025-03-30T12:00:00Z")))).toBe(86_400);
  });
});

describe("retryAfterSeconds", () => {
  const window: CalendarWindow = windowAt("hour", at("2025-01-01T10:00:00Z"));

  it("rounds the time left up to whole seconds, at least 1", () => {
    expect(retryAfterSeconds(window.start, window)).toBe(3600);
    expect(retryAfterSeconds(window.start + 1, window)).toBe(3600);
    expect(retryAfterSeconds(window.end - 1000, window)).toBe(1);
    expect(retryAfterSeconds(window.end - 1, window)).toBe(1);
    expect(retryAfterSeconds(window.end + 5000, window)).toBe(1);
  });

  it("waiting that long always lands in a later window", () => {
    for (const kind of METER_WINDOWS) {
      const w = windowAt(kind, at("2025-02-27T13:14:15.678Z"));
      for (const now of [w.start, w.start + 999, w.end - 1001, w.end - 1]) {
        expect(now + retryAfterSeconds(now, w) * 1000).toBeGreaterThanOrEqual(w.end);
      }
    }
  });
});

describe("counter lifetime", () => {
  it("TTL is an hour after the window ends, in epoch seconds", () => {
    const window = windowAt("day", at("2025-06-15T08:00:00Z"));
    expect(counterTtl(window)).toBe(at("2025-06-16T01:00:00Z") / 1000);
  });

  it("a counter is ignored once its window has ended (TTL deletion is late)", () => {
    const window = windowAt("minute", at("2025-06-15T08:00:30Z"));
    const counter = { windowEnd: window.end };
    expect(isExpired(counter, window.end - 1)).toBe(false);
    expect(isExpired(counter, window.end)).toBe(true);
    expect(isExpired(counter, window.end + 3_600_000)).toBe(true);
  });
});

describe("counter keys", () => {
  it("one partition per meter, or per meter and caller; sKey <window>#<windowStartMs>", () => {
    const start = windowAt("hour", at("2025-06-15T08:20:00Z")).start;
    expect(keys.meterWindow("m1", "hour", start)).toEqual({ pKey: "METERUSE#m1", sKey: `hour#${start}` });
    const hash = callerHash("user-1");
    expect(keys.meterWindow("m1", "hour", start, hash)).toEqual({
      pKey: `METERUSE#m1#${hash}`,
      sKey: `hour#${start}`,
    });
  });

  it("the caller hash is the first 32 hex characters of the value's SHA-256", () => {
    expect(callerHash("user-1")).toBe(createHash("sha256").update("user-1").digest("hex").slice(0, 32));
    expect(callerHash("user-1")).toMatch(/^[0-9a-f]{32}$/);
    expect(callerHash("user-2")).not.toBe(callerHash("user-1"));
    // No value: one shared bucket.
    expect(callerHash("")).toBe("e3b0c44298fc1c149afbf4c8996fb924");
    expect(callerHash("jörg")).toBe(
      createHash("sha256").update(Buffer.from("jörg", "utf8")).digest("hex").slice(0, 32),
    );
  });
});

describe("limits and thresholds", () => {
  it("a window limit is a positive finite number, else none", () => {
    expect(windowLimit({ minute: 10 }, "minute")).toBe(10);
    expect(windowLimit({ minute: 10 }, "hour")).toBeNull();
    expect(windowLimit({ minute: 0 }, "minute")).toBeNull();
    expect(windowLimit({ minute: -1 }, "minute")).toBeNull();
    expect(windowLimit({ minute: Number.POSITIVE_INFINITY }, "minute")).toBeNull();
    expect(windowLimit({ minute: null }, "minute")).toBeNull();
    expect(windowLimit(null, "minute")).toBeNull();
  });

  it("a threshold above the same window's limit is clamped to it (4.9)", () => {
    expect(effectiveThreshold({ hour: 500 }, { hour: 100 }, "hour")).toBe(100);
    expect(effectiveThreshold({ hour: 80 }, { hour: 100 }, "hour")).toBe(80);
    expect(effectiveThreshold({ hour: 100 }, { hour: 100 }, "hour")).toBe(100);
  });

  it("only the same window's limit clamps", () => {
    expect(effectiveThreshold({ hour: 500 }, { minute: 10, day: 100 }, "hour")).toBe(500);
    expect(effectiveThreshold({ hour: 500 }, null, "hour")).toBe(500);
    expect(effectiveThreshold({ hour: 500 }, { hour: 0 }, "hour")).toBe(500);
  });

  it("windows without a positive threshold are ignored", () => {
    expect(effectiveThreshold({ hour: 500 }, { day: 10 }, "day")).toBeNull();
    expect(effectiveThreshold({ day: 0 }, { day: 10 }, "day")).toBeNull();
    expect(effectiveThreshold({ day: -5 }, { day: 10 }, "day")).toBeNull();
    expect(effectiveThreshold(null, { day: 10 }, "day")).toBeNull();
  });

  it("a crossing is old value below the threshold and new value at or above it", () => {
    expect(crossedThreshold(79, 80, 80)).toBe(true);
    expect(crossedThreshold(70, 95, 80)).toBe(true);
    expect(crossedThreshold(80, 81, 80)).toBe(false);
    expect(crossedThreshold(10, 79, 80)).toBe(false);
  });
});
