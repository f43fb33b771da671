/**
 * Scheduled (EventBridge, one rule per cadence; locally every minute for all cadences): meter
 * alert digests of the periods that ended (lib/domain/meter-digests.ts). The rule's input names
 * the cadence and passes the event's time, so a delayed invocation digests the periods of its
 * schedule, not of the moment it ran.
 */

import { z } from "zod";
import { loadAppUrl } from "#lib/app-url.ts";
import { type DigestReport, runMeterDigests } from "#lib/domain/meter-digests.ts";
import { ALERT_CADENCES } from "#lib/domain/meter-periods.ts";
import { log, logReady } from "#lib/log.ts";

const DigestEvent = z
  .object({ cadence: z.enum(ALERT_CADENCES).optional(), time: z.iso.datetime({ offset: true }).optional() })
  .optional();

export async function handler(
  event?: unknown,
): Promise<{ periods: number; notifications: number; failed: number }> {
  await logReady();
  await loadAppUrl();
  const input = DigestEvent.parse(event ?? undefined);
  const reports: DigestReport[] = await runMeterDigests({
    cadences: input?.cadence ? [input.cadence] : undefined,
    now: input?.time ? Date.parse(input.time) : undefined,
  });
  const summary = {
    periods: reports.length,
    notifications: reports.reduce((sum, report) => sum + report.notificationsCreated, 0),
    failed: reports.reduce((sum, report) => sum + report.failed, 0),
  };
  // A run every minute is routine (debug); one that sent notifications is news (info).
  if (reports.length > 0)
    log[summary.notifications > 0 ? "info" : "debug"]("Meter digest run", { ...summary, reports });
  if (summary.failed > 0)
    throw new Error(`${summary.failed} meter digests failed; the next run retries them`);
  return summary;
}
