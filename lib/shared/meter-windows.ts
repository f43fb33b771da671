/**
 * Fixed calendar windows in UTC, the one window function of the gateway: meter counters (minute,
 * hour, day, month) and the plan rate limit (a minute window, lib/domain/rate-limit.ts). Pure.
 * See docs/predicates.md ("Windows").
 */
import { createHash } from "node:crypto";

export const METER_WINDOWS = ["minute", "hour", "day", "month"] as const;
export type MeterWindow = (typeof METER_WINDOWS)[number];

export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

/** A window: `start` inclusive, `end` exclusive, both epoch milliseconds. */
export interface TimeWindow {
  start: number;
  end: number;
}

export interface CalendarWindow extends TimeWindow {
  kind: MeterWindow;
}

/** A window of a fixed length aligned to the epoch (minutes, hours and UTC days are). */
export function fixedWindowAt(nowMs: number, lengthMs: number): TimeWindow {
  const start = Math.floor(nowMs / lengthMs) * lengthMs;
  return { start, end: start + lengthMs };
}

/**
 * The window of this kind holding `nowMs`: a whole UTC minute, hour or day, or a calendar month
 * (from 00:00 UTC of its first day to 00:00 UTC of the next month's first day, so 28 to 31 days).
 */
export function windowAt(kind: MeterWindow, nowMs: number): CalendarWindow {
  switch (kind) {
    case "minute":
      return { kind, ...fixedWindowAt(nowMs, MINUTE_MS) };
    case "hour":
      return { kind, ...fixedWindowAt(nowMs, HOUR_MS) };
    case "day":
      return { kind, ...fixedWindowAt(nowMs, DAY_MS) };
    case "month": {
      const date = new Date(nowMs);
      const year = date.getUTCFullYear();
      const month = date.getUTCMonth();
      // Date.UTC carries month 12 into January of the next year.
      return { kind, start: Date.UTC(year, month, 1), end: Date.UTC(year, month + 1, 1) };
    }
  }
}

/** The window's length in whole seconds (a month: 2,419,200 to 2,678,400). */
export const windowSeconds = (window: TimeWindow): number => Math.round((window.end - window.start) / 1000);

/** Whole seconds until the window ends, at least 1 (the value of `Retry-After`). */
export function retryAfterSeconds(nowMs: number, window: Pick<TimeWindow, "end">): number {
  return Math.max(1, Math.ceil((window.end - nowMs) / 1000));
}

/** Seconds a counter outlives its window before DynamoDB's TTL may delete it. */
export const COUNTER_TTL_GRACE_SECONDS = 3600;

/** A counter item's `TTL` (epoch seconds): an hour after its window ends. */
export const counterTtl = (window: Pick<TimeWindow, "end">): number =>
  Math.ceil(window.end / 1000) + COUNTER_TTL_GRACE_SECONDS;

/**
 * Whether a counter belongs to a window that has ended: TTL deletion is late (up to days), so a
 * read ignores such an item instead of trusting that it is gone.
 */
export const isExpired = (counter: { windowEnd: number }, nowMs: number): boolean =>
  counter.windowEnd <= nowMs;

/** Per-window numbers of a meter (limits, alert thresholds); absent or null windows are unset. */
export type WindowNumbers = Partial<Record<MeterWindow, number | null | undefined>>;

const positive = (value: unknown): value is number =>
  typeof value === "number" && Number.isFinite(value) && value > 0;

/** The positive limit of a window, or null when that window has none (it never blocks). */
export function windowLimit(limits: WindowNumbers | null | undefined, window: MeterWindow): number | null {
  const limit = limits?.[window];
  return positive(limit) ? limit : null;
}

/**
 * The alert threshold of a window (spec 4.9): null when the window has no positive threshold
 * (ignored); a threshold above the same window's positive limit is clamped to that limit.
 */
export function effectiveThreshold(
  alertThreshold: WindowNumbers | null | undefined,
  limits: WindowNumbers | null | undefined,
  window: MeterWindow,
): number | null {
  const threshold = alertThreshold?.[window];
  if (!positive(threshold)) return null;
  const limit = windowLimit(limits, window);
  return limit !== null && limit < threshold ? limit : threshold;
}

/**
 * The windows a meter counts (docs/meters.md, "Counting on the data plane"): each window with a
 * limit, each window with an alert threshold when its alerts use `threshold`, all four when it has
 * neither (an aggregate-only meter still accumulates).
 */
export function countedWindows(meter: {
  limits?: WindowNumbers | null;
  alerts?: { enabled: boolean; notifyTrigger?: string; alertThreshold?: WindowNumbers } | null;
}): MeterWindow[] {
  const thresholds =
    meter.alerts?.enabled && meter.alerts.notifyTrigger === "threshold" ? meter.alerts : null;
  const counted = METER_WINDOWS.filter(
    (kind) =>
      windowLimit(meter.limits, kind) !== null ||
      (thresholds !== null && effectiveThreshold(thresholds.alertThreshold, meter.limits, kind) !== null),
  );
  return counted.length > 0 ? counted : [...METER_WINDOWS];
}

/** Whether a counter went from below the threshold to at or above it (one crossing per window). */
export const crossedThreshold = (oldValue: number, newValue: number, threshold: number): boolean =>
  oldValue < threshold && threshold <= newValue;

/**
 * The per-caller part of a counter's partition key: the first 32 hex characters (128 bits) of the
 * SHA-256 of the bound `limitBy` value (UTF-8). A request without a value counts under "" (one
 * shared bucket).
 */
export const callerHash = (value: string): string =>
  createHash("sha256").update(value, "utf8").digest("hex").slice(0, 32);
