/**
 * Notifications (spec 2.13, 4.12). Three inboxes: system (platform-wide), user and client. Ids are
 * UUIDv7, so a partition's sort order is time order and lists read newest first. Lists never mark
 * anything read; getting one notification by id marks it read. System notifications are shared by
 * every user, so their read state is a per-user receipt item rather than a flag on the shared item.
 *
 * The API reads an inbox whose access was checked before (lib/api/dispatch.ts): the system inbox
 * (any authenticated user), the caller's own (self) or a client's (a member, reader role or more).
 */

import { createHash } from "node:crypto";
import { v7 as uuidv7 } from "uuid";
import {
  findNotification,
  listNotificationsOfInbox,
  markNotificationRead,
  type NotificationItem,
  type NotificationScope,
  notificationKeys,
  putNotification,
  putReadReceipt,
  readIdsOfUser,
} from "#lib/db/entities/notification.ts";
import { type PageRequest, paginate } from "#lib/db/pagination.ts";
import { nowIso, nowSeconds } from "#lib/db/store.ts";
import { notFound } from "#lib/shared/errors.ts";
import { isNotificationType, type NotificationType } from "#lib/shared/notification-types.ts";
import type { ClientAccess } from "./access.ts";

export type { NotificationScope } from "#lib/db/entities/notification.ts";

export const NOTIFICATION_NOT_FOUND = "Notification not found";
/** Notifications expire after 180 days (TTL), which also bounds every inbox. */
export const NOTIFICATION_RETENTION_DAYS = 180;

/**
 * The inbox an API caller reads: the shared system inbox (read receipts are the reader's own), the
 * caller's own inbox, or the inbox of a client the caller is a member of.
 */
export type NotificationInbox =
  | { kind: "system"; readerId: string }
  | { kind: "user"; userId: string }
  | { kind: "client"; access: ClientAccess };

/**
 * A notification id derived from what it reports, so that writing it again (a rerun, a redelivered
 * stream record) finds the same item: UUIDv7-shaped, its timestamp `atMs` (inbox order is time
 * order), the rest a hash of `parts`.
 */
export function derivedNotificationId(atMs: number, parts: readonly string[]): string {
  const hash = createHash("sha256").update(parts.join("\n")).digest();
  const bytes = Buffer.alloc(16);
  bytes.writeUIntBE(atMs, 0, 6);
  hash.copy(bytes, 6, 0, 10);
  bytes[6] = 0x70 | ((bytes[6] as number) & 0x0f);
  bytes[8] = 0x80 | ((bytes[8] as number) & 0x3f);
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function scopeOf(inbox: NotificationInbox): NotificationScope {
  if (inbox.kind === "system") return { kind: "system" };
  if (inbox.kind === "user") return { kind: "user", userId: inbox.userId };
  return { kind: "client", clientId: inbox.access.clientId };
}

/** The logical pKey the API shows: SYSTEM, the user id or the client id. */
const logicalOwner = (scope: NotificationScope) =>
  scope.kind === "system" ? "SYSTEM" : scope.kind === "user" ? scope.userId : scope.clientId;

export function toApiNotification(item: NotificationItem, scope: NotificationScope, read?: boolean) {
  return {
    notificationId: item.notificationId,
    // Stored before the list was closed, an unknown type reads as a system notification.
    type: isNotificationType(item.type) ? item.type : ("system" as const),
    title: item.title,
    message: item.message,
    read: read ?? item.read,
    createdAt: item.createdAt,
    pKey: logicalOwner(scope),
    sKey: item.notificationId,
    ...(item.data ? { data: item.data } : {}),
  };
}

export async function createNotification(
  scope: NotificationScope,
  input: { type: NotificationType; title: string; message: string },
): Promise<NotificationItem> {
  const notificationId = uuidv7();
  const item: NotificationItem = {
    ...notificationKeys.item(scope, notificationId),
    entity: "notification",
    notificationId,
    type: input.type,
    title: input.title,
    message: input.message,
    read: false,
    createdAt: nowIso(),
    TTL: nowSeconds() + NOTIFICATION_RETENTION_DAYS * 86_400,
  };
  await putNotification(item);
  return item;
}

export async function listNotifications(inbox: NotificationInbox, page: PageRequest) {
  const scope = scopeOf(inbox);
  const { items: pageItems, pagination } = paginate(await listNotificationsOfInbox(scope), page);
  if (inbox.kind !== "system") {
    return { notifications: pageItems.map((item) => toApiNotification(item, scope)), pagination };
  }
  const readIds = await readIdsOfUser(
    inbox.readerId,
    pageItems.map((item) => item.notificationId),
  );
  return {
    notifications: pageItems.map((item) => toApiNotification(item, scope, readIds.has(item.notificationId))),
    pagination,
  };
}

/** Get one notification and mark it read (for the reader, in the system inbox). */
export async function readNotification(inbox: NotificationInbox, notificationId: string) {
  const scope = scopeOf(inbox);
  if (inbox.kind === "system") {
    const notification = await findNotification(scope, notificationId);
    if (!notification) throw notFound(NOTIFICATION_NOT_FOUND);
    await putReadReceipt(inbox.readerId, notification);
    return toApiNotification(notification, scope, true);
  }
  const notification = await markNotificationRead(scope, notificationId);
  if (!notification) throw notFound(NOTIFICATION_NOT_FOUND);
  return toApiNotification(notification, scope);
}
