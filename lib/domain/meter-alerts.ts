/**
 * Meter alert occurrences from the regional table's stream (spec 6.3; docs/meters.md, "Alert
 * digests"). No extra write on the request path: the data plane's own writes say what happened.
 * - A request-log INSERT: `metering.applied` (the meter applied: predicate_match) and
 *   `metering.refused` (a limit refused the request: exceed).
 * - A meter-counter INSERT or MODIFY: a threshold crossing, old value < threshold <= new value,
 *   the threshold clamped to the same window's limit (spec 4.9).
 * An occurrence counts for a meter whose `alerts.enabled` is true and whose `notifyTrigger` is
 * that trigger, in the meter's cadence period holding the event's time.
 *
 * The pure part (sources of a record, occurrence of a source under a meter's policy) is separate
 * from the processor, which reads each meter once per batch (lib/db/entities/meter.ts, findMeter)
 * and writes through addOccurrences. The threshold rules are the meters' own
 * (lib/shared/meter-windows.ts: effectiveThreshold, crossedThreshold).
 */
import { z } from "zod";
import { findMeter, type MeterItem } from "#lib/db/entities/meter.ts";
import {
  addOccurrences,
  type OccurrenceAdd,
  type RecordContribution,
} from "#lib/db/entities/meter-occurrence.ts";
import { REGION_STREAM_FILTERS } from "#lib/infra/region-stream.ts";
import { describeError, log } from "#lib/log.ts";
import { crossedThreshold, effectiveThreshold } from "#lib/shared/meter-windows.ts";
import type { DecodedStreamRecord, StreamProcessor } from "#lib/streams/stream-batch.ts";
import { METER_WINDOWS, type MeterWindow, type NotifyTrigger, periodAt } from "./meter-periods.ts";

/** What an occurrence depends on in a stored meter: its alert policy and its limits (clamping). */
export type MeterAlertPolicy = Pick<MeterItem, "alerts" | "limits">;

/** Something that happened to a meter, before its alert policy is known. */
export interface AlertSource {
  trigger: NotifyTrigger;
  clientId: string;
  proxyId: string;
  meterId: string;
  /** Epoch ms of the event: when the request was received, or when the counter changed. */
  at: number;
  /** exceed: the refusing window; threshold: the counter's window; predicate_match: null. */
  window: MeterWindow | null;
  /** threshold only: the counter's value before and after the change. */
  crossing?: { before: number; after: number };
}

const Metering = z.object({
  applied: z.array(z.string()).default([]),
  refused: z.array(z.object({ meterId: z.string(), window: z.enum(METER_WINDOWS) })).default([]),
});

/** The request-log fields read here (written by the data plane, lib/data-plane/request-log.ts). */
const RequestLogImage = z.object({
  entity: z.literal("requestLog"),
  clientId: z.string(),
  proxyId: z.string(),
  /** Unix ms when the proxy received the request (spec 2.11). */
  processedAt: z.number().optional(),
  proxyData: z.object({ receivedAt: z.number().optional() }).nullable().optional(),
  metering: Metering.optional(),
});

/** The meter-counter fields read here (contract: entity "meterCounter"). */
const CounterImage = z.object({
  entity: z.literal("meterCounter"),
  clientId: z.string(),
  proxyId: z.string(),
  meterId: z.string(),
  window: z.enum(METER_WINDOWS),
  value: z.number().optional(),
});

/**
 * What one stream record says about meters. A record that is not a request log or a counter, or
 * whose fields do not parse, says nothing (it must not block the stream).
 */
export function alertSourcesOf(record: DecodedStreamRecord): AlertSource[] {
  const image = record.newImage;
  if (!image) return [];
  if (image.entity === "requestLog" && record.eventName === "INSERT") {
    const parsed = RequestLogImage.safeParse(image);
    if (!parsed.success || !parsed.data.metering) return [];
    const { clientId, proxyId, metering } = parsed.data;
    const at = parsed.data.processedAt ?? parsed.data.proxyData?.receivedAt ?? record.changedAt;
    const base = { clientId, proxyId, at };
    return [
      ...[...new Set(metering.applied)].map(
        (meterId): AlertSource => ({ ...base, trigger: "predicate_match", meterId, window: null }),
      ),
      ...metering.refused.map(
        (refusal): AlertSource => ({
          ...base,
          trigger: "exceed",
          meterId: refusal.meterId,
          window: refusal.window,
        }),
      ),
    ];
  }
  if (image.entity === "meterCounter" && (record.eventName === "INSERT" || record.eventName === "MODIFY")) {
    const parsed = CounterImage.safeParse(image);
    if (!parsed.success) return [];
    const before = record.oldImage?.entity === "meterCounter" ? Number(record.oldImage.value ?? 0) : 0;
    const after = parsed.data.value ?? 0;
    if (!(after > before)) return [];
    const { clientId, proxyId, meterId, window } = parsed.data;
    return [
      {
        trigger: "threshold",
        clientId,
        proxyId,
        meterId,
        at: record.changedAt,
        window,
        crossing: { before: Number.isFinite(before) ? before : 0, after },
      },
    ];
  }
  return [];
}

/** The occurrence a source adds under the meter's policy, if its alerts are on for that trigger. */
export function occurrenceOf(
  source: AlertSource,
  meter: MeterAlertPolicy | undefined,
): OccurrenceAdd | undefined {
  const alerts = meter?.alerts;
  if (!meter || !alerts?.enabled || !alerts.cadence || alerts.notifyTrigger !== source.trigger)
    return undefined;
  if (source.trigger === "threshold") {
    const threshold = source.window
      ? effectiveThreshold(alerts.alertThreshold, meter.limits, source.window)
      : null;
    const crossing = source.crossing;
    if (threshold === null || !crossing || !crossedThreshold(crossing.before, crossing.after, threshold))
      return undefined;
  }
  const period = periodAt(alerts.cadence, source.at);
  return {
    clientId: source.clientId,
    proxyId: source.proxyId,
    meterId: source.meterId,
    notifyTrigger: source.trigger,
    cadence: alerts.cadence,
    periodStart: period.start,
    periodEnd: period.end,
    window: source.trigger === "predicate_match" ? null : source.window,
  };
}

export const METER_ALERTS_PROCESSOR = "meterAlerts";

/**
 * The stream processor: occurrences of each record (each meter read once per batch), then the
 * batch's occurrences added idempotently (addOccurrences). A record whose meter cannot be read
 * stops the batch there: what precedes it is written, it and the rest are delivered again.
 */
export const meterAlertProcessor: StreamProcessor = {
  name: METER_ALERTS_PROCESSOR,
  filters: REGION_STREAM_FILTERS.meterAlerts,
  async process(records) {
    const region = records[0]?.region;
    if (!region) return {};
    const policies = new Map<string, Promise<MeterAlertPolicy | undefined>>();
    const policyOf = (source: AlertSource) => {
      const id = JSON.stringify([source.clientId, source.proxyId, source.meterId]);
      let policy = policies.get(id);
      if (!policy) {
        policy = findMeter(region, source.clientId, source.proxyId, source.meterId);
        policies.set(id, policy);
      }
      return policy;
    };

    const contributions: (RecordContribution & { position: number })[] = [];
    let failedAt: number | undefined;
    for (const [position, record] of records.entries()) {
      try {
        const occurrences: OccurrenceAdd[] = [];
        for (const source of alertSourcesOf(record)) {
          const occurrence = occurrenceOf(source, await policyOf(source));
          if (occurrence) occurrences.push(occurrence);
        }
        if (occurrences.length > 0) contributions.push({ eventId: record.eventId, occurrences, position });
      } catch (error) {
        log.error("Meter alert occurrences could not be derived", {
          eventId: record.eventId,
          ...describeError(error),
        });
        failedAt = position;
        break;
      }
    }
    const written = await addOccurrences(region, METER_ALERTS_PROCESSOR, contributions);
    if (written.failedAt !== undefined) {
      const position = contributions[written.failedAt]?.position ?? 0;
      log.error("Meter alert occurrences could not be written", { eventId: records[position]?.eventId });
      failedAt = Math.min(failedAt ?? position, position);
    }
    if (written.alreadyApplied > 0)
      log.info("Redelivered stream records skipped", { count: written.alreadyApplied });
    return failedAt === undefined ? {} : { failedAt };
  },
};
