/**
 * The scheduled meter alert digest (spec 6.3; docs/meters.md, "Alert digests"): per cadence, for
 * each period that ended and is not yet delivered, every meter occurrence item of that period (one
 * Query per shard and region) becomes one client notification of type `usage` and one e-mail to
 * the client's owners and admins.
 *
 * Idempotent at each step, so a rerun, an overlapping run or a crash never duplicates:
 * - the notification id is derived from (client, meter, trigger, cadence, period) and written
 *   with a conditional put;
 * - the e-mail is claimed on the notification item, sent, then recorded (`emailSentAt`);
 * - the period is recorded delivered (home table) only when all of it was; until then each run
 *   retries it (catch-up over the last DIGEST_LOOKBACK_PERIODS periods of the cadence).
 */

import { getConfig } from "#lib/config.ts";
import { listMembersOfClient } from "#lib/db/entities/member.ts";
import {
  listDigestRuns,
  listOccurrencesOfPeriod,
  type MeterOccurrenceItem,
  putDigestRun,
} from "#lib/db/entities/meter-occurrence.ts";
import {
  claimNotificationEmail,
  type NotificationItem,
  type NotificationScope,
  notificationKeys,
  putNotificationIfAbsent,
  recordNotificationEmailSent,
  releaseNotificationEmailClaim,
} from "#lib/db/entities/notification.ts";
import { findUser } from "#lib/db/entities/user.ts";
import { nowIso } from "#lib/db/store.ts";
import { sendEmail, textToHtml } from "#lib/email.ts";
import { describeError, log } from "#lib/log.ts";
import type { NotificationType } from "#lib/shared/notification-types.ts";
import { isAdministrator } from "#lib/shared/roles.ts";
import {
  ALERT_CADENCES,
  type AlertCadence,
  longestFirst,
  METER_WINDOWS,
  type MeterWindow,
  type Period,
  periodAt,
  previousPeriod,
} from "./meter-periods.ts";
import { derivedNotificationId, NOTIFICATION_RETENTION_DAYS } from "./notifications.ts";

/** The notification type of a digest (spec 6.3 leaves it open). */
export const USAGE_NOTIFICATION_TYPE: NotificationType = "usage";

/**
 * A period is digested once it ended at least this long ago: room for the stream's delivery lag
 * (a record of the period's last second reaching the consumer). An occurrence arriving after its
 * period was delivered is not reported (docs/meters.md).
 */
export const DIGEST_GRACE_MS: Readonly<Record<AlertCadence, number>> = {
  minute: 60_000,
  hour: 60_000,
  day: 120_000,
  month: 120_000,
};
/** How many ended periods a run looks back over for one not yet delivered (catch-up, bounded). */
export const DIGEST_LOOKBACK_PERIODS: Readonly<Record<AlertCadence, number>> = {
  minute: 15,
  hour: 6,
  day: 3,
  month: 2,
};
/** A claimed e-mail not recorded sent after this long is taken over (its sender crashed). */
export const EMAIL_CLAIM_STALE_MS = 10 * 60_000;

/** The ended periods a run at `now` considers, oldest first. */
export function periodsToDigest(cadence: AlertCadence, now: number): Period[] {
  let period = previousPeriod(cadence, periodAt(cadence, now - DIGEST_GRACE_MS[cadence]));
  const periods: Period[] = [];
  for (let i = 0; i < DIGEST_LOOKBACK_PERIODS[cadence]; i++) {
    periods.unshift(period);
    period = previousPeriod(cadence, period);
  }
  return periods;
}

/**
 * The notification id of a digest: UUIDv7-shaped and time-ordered like every other notification id
 * (its timestamp is the period's end), the rest of it a hash of what it reports, so the same
 * digest always gets the same id.
 */
export function digestNotificationId(occurrence: DigestSubject): string {
  return derivedNotificationId(occurrence.periodEnd, [
    "meter-digest",
    occurrence.clientId,
    occurrence.meterId,
    occurrence.notifyTrigger,
    occurrence.cadence,
    String(occurrence.periodStart),
  ]);
}

type DigestSubject = Pick<
  MeterOccurrenceItem,
  "clientId" | "meterId" | "proxyId" | "notifyTrigger" | "cadence" | "periodStart" | "periodEnd"
>;

/** Occurrences per limit window (exceed, threshold). */
export function windowCounts(occurrence: MeterOccurrenceItem): Partial<Record<MeterWindow, number>> {
  const counts: Partial<Record<MeterWindow, number>> = {};
  for (const window of METER_WINDOWS) {
    const count = occurrence[`${window}Count`];
    if (typeof count === "number" && count > 0) counts[window] = count;
  }
  return counts;
}

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? "" : "s"}`;

/** The notification of one occurrence item: what the inbox shows and the e-mail says. */
export function usageNotification(occurrence: MeterOccurrenceItem, createdAt = nowIso()): NotificationItem {
  const notificationId = digestNotificationId(occurrence);
  const windows = windowCounts(occurrence);
  /** The most significant window concerned (the longest), null for predicate_match. */
  const window =
    occurrence.notifyTrigger === "predicate_match"
      ? null
      : (longestFirst(Object.keys(windows) as MeterWindow[])[0] ?? null);
  const periodStart = new Date(occurrence.periodStart).toISOString();
  const periodEnd = new Date(occurrence.periodEnd).toISOString();
  const count = occurrence.occurrences;
  const what = {
    exceed: `refused ${plural(count, "request")} over its ${Object.keys(windows).join(" and ") || "limit"} limit`,
    predicate_match: `applied to ${plural(count, "request")}`,
    threshold: `reached its ${Object.keys(windows).join(" and ")} alert threshold ${plural(count, "time")}`,
  }[occurrence.notifyTrigger];
  return {
    ...notificationKeys.item({ kind: "client", clientId: occurrence.clientId }, notificationId),
    entity: "notification",
    notificationId,
    type: USAGE_NOTIFICATION_TYPE,
    title: `Usage alert: meter ${occurrence.meterId}`,
    message: `Meter ${occurrence.meterId} of proxy ${occurrence.proxyId} ${what} between ${periodStart} and ${periodEnd} (${occurrence.cadence} digest).`,
    read: false,
    createdAt,
    TTL: Math.floor(Date.parse(createdAt) / 1000) + NOTIFICATION_RETENTION_DAYS * 86_400,
    data: {
      meterId: occurrence.meterId,
      proxyId: occurrence.proxyId,
      notifyTrigger: occurrence.notifyTrigger,
      window,
      count,
      periodStart,
      periodEnd,
      cadence: occurrence.cadence,
      windows,
    },
  };
}

/** The e-mail addresses of a client's owners and admins (bounded by the member list). */
async function administratorEmails(clientId: string): Promise<string[]> {
  const members = (await listMembersOfClient(clientId)).filter((member) => isAdministrator(member.roles));
  const users = await Promise.all(members.map((member) => findUser(member.userId)));
  return [...new Set(users.flatMap((user) => (user ? [user.userEmail] : [])))];
}

/** Deliver one occurrence item: its notification (once) and its e-mail (once). */
async function deliver(
  occurrence: MeterOccurrenceItem,
  recipients: (clientId: string) => Promise<string[]>,
): Promise<{ created: boolean; emailed: boolean }> {
  const notification = usageNotification(occurrence);
  const created = await putNotificationIfAbsent(notification);
  const scope: NotificationScope = { kind: "client", clientId: occurrence.clientId };
  const staleBefore = new Date(Date.now() - EMAIL_CLAIM_STALE_MS).toISOString();
  if (!(await claimNotificationEmail(scope, notification.notificationId, staleBefore)))
    return { created, emailed: false };
  try {
    const to = await recipients(occurrence.clientId);
    if (to.length > 0) {
      const text = [
        notification.message,
        "",
        `This digest is also in the organisation's notifications (id ${notification.notificationId}).`,
        "",
        "--",
        `Sent by the API gateway at ${getConfig().appUrl} because a meter of an organisation you belong to has alerts turned on.`,
      ].join("\n");
      await sendEmail({ to, subject: notification.title, text, html: textToHtml(text) });
    }
    await recordNotificationEmailSent(scope, notification.notificationId, to.length);
    return { created, emailed: to.length > 0 };
  } catch (error) {
    await releaseNotificationEmailClaim(scope, notification.notificationId);
    throw error;
  }
}

export interface DigestReport {
  cadence: AlertCadence;
  periodStart: string;
  occurrences: number;
  notificationsCreated: number;
  emailsSent: number;
  failed: number;
  delivered: boolean;
}

/** Deliver every occurrence of one (cadence, period) in every region; record it when all went out. */
export async function digestPeriod(cadence: AlertCadence, period: Period): Promise<DigestReport> {
  const report: DigestReport = {
    cadence,
    periodStart: new Date(period.start).toISOString(),
    occurrences: 0,
    notificationsCreated: 0,
    emailsSent: 0,
    failed: 0,
    delivered: false,
  };
  const recipientCache = new Map<string, Promise<string[]>>();
  const recipients = (clientId: string) => {
    let cached = recipientCache.get(clientId);
    if (!cached) {
      cached = administratorEmails(clientId);
      recipientCache.set(clientId, cached);
    }
    return cached;
  };
  let truncated = false;
  for (const region of getConfig().regions) {
    const found = await listOccurrencesOfPeriod(region, cadence, period.start);
    truncated ||= found.truncated;
    for (const occurrence of found.items) {
      report.occurrences += 1;
      try {
        const result = await deliver(occurrence, recipients);
        if (result.created) report.notificationsCreated += 1;
        if (result.emailed) report.emailsSent += 1;
      } catch (error) {
        report.failed += 1;
        log.error("Meter digest could not be delivered", {
          meterId: occurrence.meterId,
          cadence,
          periodStart: report.periodStart,
          ...describeError(error),
        });
      }
    }
  }
  if (truncated)
    log.error("Meter digest period holds more occurrences than one run reads", {
      cadence,
      periodStart: report.periodStart,
    });
  if (report.failed === 0) {
    await putDigestRun({
      cadence,
      periodStart: period.start,
      periodEnd: period.end,
      notifications: report.occurrences,
    });
    report.delivered = true;
  }
  return report;
}

/**
 * One run of the digest job: for each cadence, each recent period that ended and is not recorded
 * delivered, oldest first.
 */
export async function runMeterDigests(
  options: { cadences?: readonly AlertCadence[]; now?: number } = {},
): Promise<DigestReport[]> {
  const now = options.now ?? Date.now();
  const reports: DigestReport[] = [];
  for (const cadence of options.cadences ?? ALERT_CADENCES) {
    const periods = periodsToDigest(cadence, now);
    const first = periods[0];
    const last = periods[periods.length - 1];
    if (!first || !last) continue;
    const done = new Set(
      (await listDigestRuns(cadence, first.start, last.start)).map((run) => run.periodStart),
    );
    for (const period of periods) {
      if (done.has(period.start)) continue;
      reports.push(await digestPeriod(cadence, period));
    }
  }
  return reports;
}
