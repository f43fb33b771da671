/**
 * The organisation's notification of a transform suspension (docs/transforms.md "Suspension"), from
 * the regional table's stream: the data plane stores the suspension a request's kill started on
 * that request's log (`transformSuspension`), and this processor writes one `transform-suspended`
 * notification into the client's inbox (home table) per such log. Nothing is written on the
 * request path, and a failed write never reaches the caller: the record is delivered again.
 *
 * Idempotent: the notification id is derived from the request log (clientId, proxyId, requestId)
 * and written with a conditional put, so a redelivered record changes nothing.
 */

import { z } from "zod";
import {
  type NotificationItem,
  notificationKeys,
  putNotificationIfAbsent,
} from "#lib/db/entities/notification.ts";
import { nowIso } from "#lib/db/store.ts";
import { REGION_STREAM_FILTERS } from "#lib/infra/region-stream.ts";
import { describeError, log } from "#lib/log.ts";
import type { NotificationType } from "#lib/shared/notification-types.ts";
import type { DecodedStreamRecord, StreamProcessor } from "#lib/streams/stream-batch.ts";
import { derivedNotificationId, NOTIFICATION_RETENTION_DAYS } from "./notifications.ts";

export const TRANSFORM_SUSPENDED_TYPE: NotificationType = "transform-suspended";

/** The request-log fields read here (written by the data plane, lib/data-plane/stages/log.ts). */
const SuspendingLog = z.object({
  entity: z.literal("requestLog"),
  requestId: z.string(),
  clientId: z.string(),
  proxyId: z.string(),
  transformSuspension: z.object({
    transformId: z.string(),
    kind: z.string(),
    until: z.string(),
    cooldownMs: z.number(),
  }),
});
export type SuspendingLog = z.infer<typeof SuspendingLog>;

/** The notification of one suspension (its id derived from the request log). */
export function suspensionNotification(
  logged: SuspendingLog,
  region: string,
  createdAt = nowIso(),
): NotificationItem {
  const { transformId, kind, until, cooldownMs } = logged.transformSuspension;
  const startedAt = Date.parse(until) - cooldownMs;
  const notificationId = derivedNotificationId(
    Number.isFinite(startedAt) ? startedAt : Date.parse(createdAt),
    [TRANSFORM_SUSPENDED_TYPE, logged.clientId, logged.proxyId, logged.requestId],
  );
  const seconds = Math.round(cooldownMs / 1000);
  return {
    ...notificationKeys.item({ kind: "client", clientId: logged.clientId }, notificationId),
    entity: "notification",
    notificationId,
    type: TRANSFORM_SUSPENDED_TYPE,
    title: `Transform suspended: ${kind} transform ${transformId}`,
    message:
      `The ${kind} transform ${transformId} of proxy ${logged.proxyId} cost the sandbox its worker ` +
      `repeatedly (past the hard deadline, or a host failure) on a data-plane instance in ${region} and is suspended there until ${until} ` +
      `(cool-down ${seconds} s): its calls answer 500 transform-error without running it. It runs ` +
      `again after the cool-down, or at once when its code changes. Request ${logged.requestId} ` +
      "started the suspension.",
    read: false,
    createdAt,
    TTL: Math.floor(Date.parse(createdAt) / 1000) + NOTIFICATION_RETENTION_DAYS * 86_400,
    data: {
      transformId,
      kind,
      proxyId: logged.proxyId,
      region,
      until,
      cooldownMs,
      requestId: logged.requestId,
    },
  };
}

export const transformSuspensionProcessor: StreamProcessor = {
  name: "transformSuspensions",
  filters: REGION_STREAM_FILTERS.transformSuspensions,
  async process(records: readonly DecodedStreamRecord[]) {
    for (const [position, record] of records.entries()) {
      const parsed = SuspendingLog.safeParse(record.newImage);
      if (!parsed.success) {
        log.warn("Transform suspension record skipped: not a request log with a suspension", {
          eventId: record.eventId,
        });
        continue;
      }
      try {
        await putNotificationIfAbsent(suspensionNotification(parsed.data, record.region));
      } catch (error) {
        log.error("Transform suspension notification could not be written", {
          eventId: record.eventId,
          ...describeError(error),
        });
        return { failedAt: position };
      }
    }
    return {};
  },
};
