/**
 * The value lists and bounds of meters (spec 2.9), without zod or re2js: the meter entity
 * (lib/db/entities/meter.ts) reads them on the data plane's cold start. lib/domain/meter-schema.ts
 * re-exports them.
 */
import { METER_WINDOWS, type MeterWindow } from "./meter-windows.ts";

export const METER_TYPES = ["request_count", "response_value"] as const;
export const METER_MODES = ["all", "conditional"] as const;
export const METER_EFFECTS = ["include", "exclude"] as const;
/** The alert cadences are the meters' calendar windows (fixed, UTC: windows.ts). */
export const ALERT_CADENCES = METER_WINDOWS;
export const NOTIFY_TRIGGERS = ["exceed", "predicate_match", "threshold"] as const;
export const EXTRACTION_LOCATIONS = ["body", "header"] as const;

export type MeterType = (typeof METER_TYPES)[number];
export type MeterMode = (typeof METER_MODES)[number];
export type MeterEffect = (typeof METER_EFFECTS)[number];
export type AlertCadence = MeterWindow;
export type NotifyTrigger = (typeof NOTIFY_TRIGGERS)[number];

/** Most meters on one proxy (exact under concurrency: a counter beside the meters, lib/domain/meters.ts). */
export const MAX_METERS_PER_PROXY = 20;
