/**
 * A billing transition's record for people: one client notification of type `billing`, written in
 * the same transaction as the plan change, and an e-mail to the client's owners once it is written
 * (docs/billing.md "Plan states"). The webhook's transitions (billing-events.ts) and the owners'
 * own (billing.ts: an upgrade started, a downgrade scheduled) use the same two functions.
 */
import { v7 as uuidv7 } from "uuid";
import { getConfig } from "#lib/config.ts";
import { listMembersOfClient } from "#lib/db/entities/member.ts";
import { type NotificationItem, notificationKeys } from "#lib/db/entities/notification.ts";
import { findUser } from "#lib/db/entities/user.ts";
import { type TransactionStep, tableName } from "#lib/db/store.ts";
import { sendEmail, textToHtml } from "#lib/email.ts";
import { describeError, log } from "#lib/log.ts";
import { NOTIFICATION_RETENTION_DAYS } from "./notifications.ts";

/** The notification item of a transition and the transaction step that writes it. */
export function billingNotice(
  clientId: string,
  notice: { title: string; message: string },
  createdAt: string,
): { notification: NotificationItem; step: TransactionStep } {
  const notificationId = uuidv7();
  const notification: NotificationItem = {
    ...notificationKeys.item({ kind: "client", clientId }, notificationId),
    entity: "notification",
    notificationId,
    type: "billing",
    title: notice.title,
    message: notice.message,
    read: false,
    createdAt,
    TTL: Math.floor(Date.parse(createdAt) / 1000) + NOTIFICATION_RETENTION_DAYS * 86_400,
  };
  return {
    notification,
    step: { name: "putNotification", action: { Put: { TableName: tableName(), Item: notification } } },
  };
}

/** The owners hear of every transition by e-mail too. Best effort: the notification is the record. */
export async function emailOwners(clientId: string, notification: NotificationItem): Promise<void> {
  try {
    const members = (await listMembersOfClient(clientId)).filter((member) => member.roles.includes("owner"));
    const users = await Promise.all(members.map((member) => findUser(member.userId)));
    const owners = [...new Set(users.flatMap((user) => (user ? [user.userEmail] : [])))];
    if (!owners.length) return;
    const text = `${notification.message}\n\nBilling: ${getConfig().appUrl}/organisations/${encodeURIComponent(clientId)}/billing\n`;
    await sendEmail({ to: owners, subject: notification.title, text, html: textToHtml(text) });
  } catch (error) {
    log.warn("Could not e-mail the owners of a billing change", { clientId, ...describeError(error) });
  }
}
