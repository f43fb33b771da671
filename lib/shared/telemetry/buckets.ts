/**
 * Telemetry time buckets (spec 2.12 `sKey`): a UTC minute, hour, day or calendar month, keyed
 * `YYYY-MM-DD-HH-MM`, `YYYY-MM-DD-HH`, `YYYY-MM-DD` or `YYYY-MM`. The keys sort as text in time
 * order, so a date range is a sort-key range. The windows are the gateway's one window arithmetic
 * (lib/shared/meter-windows.ts). Pure: no clock.
 */
import { METER_WINDOWS, type TimeWindow, windowAt } from "#lib/shared/meter-windows.ts";

export const TELEMETRY_INTERVALS = METER_WINDOWS;
export type TelemetryInterval = (typeof TELEMETRY_INTERVALS)[number];

const two = (n: number) => String(n).padStart(2, "0");

/** The key of the bucket of `interval` holding the instant `atMs` (UTC). */
export function bucketKey(interval: TelemetryInterval, atMs: number): string {
  const d = new Date(atMs);
  const month = `${String(d.getUTCFullYear()).padStart(4, "0")}-${two(d.getUTCMonth() + 1)}`;
  if (interval === "month") return month;
  const day = `${month}-${two(d.getUTCDate())}`;
  if (interval === "day") return day;
  const hour = `${day}-${two(d.getUTCHours())}`;
  if (interval === "hour") return hour;
  return `${hour}-${two(d.getUTCMinutes())}`;
}

/** The bucket of `interval` holding `atMs`: its key and its window (start inclusive, end exclusive). */
export function bucketAt(interval: TelemetryInterval, atMs: number): TimeWindow & { key: string } {
  const { start, end } = windowAt(interval, atMs);
  return { key: bucketKey(interval, atMs), start, end };
}

const BUCKET_KEY = /^(\d{4})-(\d{2})(?:-(\d{2})(?:-(\d{2})(?:-(\d{2}))?)?)?$/;
const PARTS: Record<TelemetryInterval, number> = { month: 2, day: 3, hour: 4, minute: 5 };

/** The start (epoch ms) of the bucket a key names, or undefined when it is not a key of `interval`. */
export function bucketStartOf(interval: TelemetryInterval, key: string): number | undefined {
  const match = BUCKET_KEY.exec(key);
  if (!match || match.slice(1).filter(Boolean).length !== PARTS[interval]) return undefined;
  const [year, month, day = 1, hour = 0, minute = 0] = match.slice(1).filter(Boolean).map(Number) as number[];
  const start = Date.UTC(year as number, (month as number) - 1, day, hour, minute);
  return bucketKey(interval, start) === key ? start : undefined;
}

/** The sort-key range of the buckets holding any instant of [fromMs, toMs] (both inclusive). */
export const bucketKeyRange = (interval: TelemetryInterval, fromMs: number, toMs: number) => ({
  from: bucketKey(interval, fromMs),
  to: bucketKey(interval, toMs),
});
