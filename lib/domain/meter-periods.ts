/**
 * The calendar windows of meters and the cadences of their alert digests: fixed UTC windows
 * (minute, hour, day, calendar month), each identified by its start in epoch ms (spec 6.3 and the
 * meters contract). Pure: no I/O, no clock.
 *
 * The meters helper builds the same window arithmetic for counting (lib/domain/meters/windows.ts,
 * not on this branch); when both are merged, one of the two `calendarPeriod`s goes.
 */
export const METER_WINDOWS = ["minute", "hour", "day", "month"] as const;
export type MeterWindow = (typeof METER_WINDOWS)[number];
/** A digest cadence is one of the windows: occurrences are rolled up per cadence period. */
export const ALERT_CADENCES = METER_WINDOWS;
export type AlertCadence = MeterWindow;
export const NOTIFY_TRIGGERS = ["exceed", "predicate_match", "threshold"] as const;
export type NotifyTrigger = (typeof NOTIFY_TRIGGERS)[number];

export interface Period {
  /** Epoch ms, inclusive. */
  start: number;
  /** Epoch ms, exclusive (the next period's start). */
  end: number;
}

const FIXED_MS = { minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const;

/** The window of `kind` that holds the instant `atMs`. */
export function calendarPeriod(kind: MeterWindow, atMs: number): Period {
  if (kind === "month") {
    const at = new Date(atMs);
    return {
      start: Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1),
      end: Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1),
    };
  }
  const size = FIXED_MS[kind];
  const start = Math.floor(atMs / size) * size;
  return { start, end: start + size };
}

/** The period just before `period`. */
export const previousPeriod = (kind: MeterWindow, period: Period): Period =>
  calendarPeriod(kind, period.start - 1);

/** Windows ordered from the longest: the most significant window first. */
export const longestFirst = (windows: Iterable<MeterWindow>): MeterWindow[] =>
  [...windows].sort((a, b) => METER_WINDOWS.indexOf(b) - METER_WINDOWS.indexOf(a));
