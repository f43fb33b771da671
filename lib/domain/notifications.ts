/**
 * Notifications (spec 2.13, 4.12). Three inboxes: system (platform-wide), user and client. Ids are
 * UUIDv7, so a partition's sort order is time order and lists read newest first. Lists never mark
 * anything read; getting one notification by id marks it read. System notifications are shared by
 * every user, so their read state is a per-user receipt item rather than a flag on the shared item.
 *
 * The API reads an inbox whose access was checked before (lib/api/dispatch.ts): the system inbox
 * (any authenticated user), the caller's own (self) or a client's (a member, reader role or more).
 */

import { v7 as uuidv7 } from "uuid";
import { GetCommand, PutCommand, UpdateCommand } from "../db/document-client.ts";
import { keys } from "../db/keys.ts";
import {
  batchGet,
  homeDb,
  type Item,
  isConditionalCheckFailure,
  isExpired,
  nowIso,
  nowSeconds,
  queryPartition,
  tableName,
} from "../db/store.ts";
import { type PageRequest, paginate } from "../http/pagination.ts";
import type { ClientAccess } from "./access.ts";
import { notFound } from "./errors.ts";

export const NOTIFICATION_NOT_FOUND = "Notification not found";
/** Notifications expire after 180 days (TTL), which also bounds every inbox. */
export const NOTIFICATION_RETENTION_DAYS = 180;

export type NotificationScope =
  | { kind: "system" }
  | { kind: "user"; userId: string }
  | { kind: "client"; clientId: string };

/**
 * The inbox an API caller reads: the shared system inbox (read receipts are the reader's own), the
 * caller's own inbox, or the inbox of a client the caller is a member of.
 */
export type NotificationInbox =
  | { kind: "system"; readerId: string }
  | { kind: "user"; userId: string }
  | { kind: "client"; access: ClientAccess };

function scopeOf(inbox: NotificationInbox): NotificationScope {
  if (inbox.kind === "system") return { kind: "system" };
  if (inbox.kind === "user") return { kind: "user", userId: inbox.userId };
  return { kind: "client", clientId: inbox.access.clientId };
}

export function partitionOf(scope: NotificationScope): string {
  if (scope.kind === "system") return keys.systemNotificationPartition();
  if (scope.kind === "user") return keys.userNotificationPartition(scope.userId);
  return keys.clientNotificationPartition(scope.clientId);
}

/** The logical pKey the API shows: SYSTEM, the user id or the client id. */
const logicalOwner = (scope: NotificationScope) =>
  scope.kind === "system" ? "SYSTEM" : scope.kind === "user" ? scope.userId : scope.clientId;

export function toApiNotification(item: Item, scope: NotificationScope, read?: boolean) {
  return {
    notificationId: String(item.notificationId),
    type: String(item.type),
    title: String(item.title),
    message: String(item.message),
    read: read ?? item.read === true,
    createdAt: item.createdAt,
    pKey: logicalOwner(scope),
    sKey: String(item.notificationId),
  };
}

export async function createNotification(
  scope: NotificationScope,
  input: { type: string; title: string; message: string },
): Promise<Item> {
  const notificationId = uuidv7();
  const item: Item = {
    pKey: partitionOf(scope),
    sKey: notificationId,
    entity: "notification",
    notificationId,
    type: input.type,
    title: input.title,
    message: input.message,
    read: false,
    createdAt: nowIso(),
    TTL: nowSeconds() + NOTIFICATION_RETENTION_DAYS * 86_400,
  };
  await homeDb().send(new PutCommand({ TableName: tableName(), Item: item }));
  return item;
}

export async function listNotifications(inbox: NotificationInbox, page: PageRequest) {
  const scope = scopeOf(inbox);
  const items = (await queryPartition(partitionOf(scope), { newestFirst: true })).filter(
    (i) => !isExpired(i),
  );
  const { items: pageItems, pagination } = paginate(items, page);
  if (inbox.kind !== "system") {
    return { notifications: pageItems.map((i) => toApiNotification(i, scope)), pagination };
  }
  const receipts = await batchGet(
    pageItems.map((i) => keys.systemNotificationReceipt(inbox.readerId, String(i.notificationId))),
  );
  const readIds = new Set(receipts.map((r) => String(r.sKey)));
  return {
    notifications: pageItems.map((i) => toApiNotification(i, scope, readIds.has(String(i.notificationId)))),
    pagination,
  };
}

/** Get one notification and mark it read (for the reader, in the system inbox). */
export async function readNotification(inbox: NotificationInbox, notificationId: string) {
  const scope = scopeOf(inbox);
  const key = { pKey: partitionOf(scope), sKey: notificationId };
  if (inbox.kind === "system") {
    const result = await homeDb().send(
      new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: true }),
    );
    if (!result.Item || isExpired(result.Item)) throw notFound(NOTIFICATION_NOT_FOUND);
    await homeDb().send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...keys.systemNotificationReceipt(inbox.readerId, notificationId),
          entity: "notificationReceipt",
          readAt: nowIso(),
          TTL: result.Item.TTL,
        },
      }),
    );
    return toApiNotification(result.Item, scope, true);
  }
  try {
    const result = await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: key,
        UpdateExpression: "SET #read = :true, readAt = if_not_exists(readAt, :now)",
        ConditionExpression: "attribute_exists(pKey) AND (attribute_not_exists(#ttl) OR #ttl > :nowSec)",
        ExpressionAttributeNames: { "#read": "read", "#ttl": "TTL" },
        ExpressionAttributeValues: { ":true": true, ":now": nowIso(), ":nowSec": nowSeconds() },
        ReturnValues: "ALL_NEW",
      }),
    );
    return toApiNotification(result.Attributes ?? {}, scope);
  } catch (error) {
    if (isConditionalCheckFailure(error)) throw notFound(NOTIFICATION_NOT_FOUND);
    throw error;
  }
}
