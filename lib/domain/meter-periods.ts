/**
 * The cadences of meter alert digests (spec 6.3): a cadence is one of the meters' calendar
 * windows (lib/shared/meter-windows.ts, `windowAt`, the one window arithmetic of the gateway), and
 * a digest period is the window of that kind holding an event. Pure: no I/O, no clock.
 */

import { METER_WINDOWS, type MeterWindow, type TimeWindow, windowAt } from "#lib/shared/meter-windows.ts";
import { ALERT_CADENCES, type AlertCadence, NOTIFY_TRIGGERS, type NotifyTrigger } from "./meter-schema.ts";

export {
  ALERT_CADENCES,
  type AlertCadence,
  METER_WINDOWS,
  type MeterWindow,
  NOTIFY_TRIGGERS,
  type NotifyTrigger,
};

/** A digest period: a calendar window, `start` inclusive, `end` exclusive (epoch ms). */
export type Period = TimeWindow;

/** The period of `cadence` holding the instant `atMs` (the calendar window of that kind). */
export function periodAt(cadence: AlertCadence, atMs: number): Period {
  const { start, end } = windowAt(cadence, atMs);
  return { start, end };
}

/** The period just before `period`. */
export const previousPeriod = (cadence: AlertCadence, period: Period): Period =>
  periodAt(cadence, period.start - 1);

/** Windows ordered from the longest: the most significant window first. */
export const longestFirst = (windows: Iterable<MeterWindow>): MeterWindow[] =>
  [...windows].sort((a, b) => METER_WINDOWS.indexOf(b) - METER_WINDOWS.indexOf(a));
