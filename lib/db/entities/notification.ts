/**
 * The notification entity (spec 2.13) as stored: a notification in one of three inboxes (system,
 * user, client) and the per-user read receipt of a system notification, their keys and the access
 * patterns that read and mark them (docs/access-patterns.md). The domain
 * (lib/domain/notifications.ts) works on NotificationItem, never on an untyped item, so no
 * `String(item.x)` coercion is needed.
 */
import { z } from "zod";
import { GetCommand, PutCommand, UpdateCommand } from "#lib/aws/document-client.ts";
import { keys } from "#lib/db/keys.ts";
import {
  batchGet,
  homeDb,
  isConditionalCheckFailure,
  isExpired,
  nowIso,
  nowSeconds,
  parseStored,
  queryPartition,
  tableName,
} from "#lib/db/store.ts";

/** Which inbox a notification is in. */
export type NotificationScope =
  | { kind: "system" }
  | { kind: "user"; userId: string }
  | { kind: "client"; clientId: string };

export const NotificationItem = z.object({
  pKey: z.string(),
  /** The notification id (UUIDv7: a partition's sort order is time order). */
  sKey: z.string(),
  entity: z.literal("notification"),
  notificationId: z.string(),
  type: z.string(),
  title: z.string(),
  message: z.string(),
  /** In a user or client inbox: whether it has been read. A system notification keeps false. */
  read: z.boolean(),
  /** When it was first read (user and client inboxes). */
  readAt: z.string().optional(),
  createdAt: z.string(),
  /** Expiry, Unix seconds (the table's TTL attribute). */
  TTL: z.number().int(),
  /** Structured payload of a notification that has one (a usage digest: docs/meters.md). */
  data: z.record(z.string(), z.unknown()).optional(),
  /** E-mail of the notification: claimed by a sender, then sent once (usage digests). */
  emailClaimedAt: z.string().optional(),
  emailSentAt: z.string().optional(),
  emailRecipients: z.number().int().nonnegative().optional(),
});
export type NotificationItem = z.infer<typeof NotificationItem>;

/** A user's read receipt of a shared system notification. */
export const NotificationReceiptItem = z.object({
  pKey: z.string(),
  /** The notification id. */
  sKey: z.string(),
  entity: z.literal("notificationReceipt"),
  readAt: z.string(),
  /** The notification's expiry: the receipt goes with it. */
  TTL: z.number().int().optional(),
});
export type NotificationReceiptItem = z.infer<typeof NotificationReceiptItem>;

/** A stored item as a NotificationItem; an item that is not one is a defect of the store, not of the caller. */
export const notificationItemOf = (item: Record<string, unknown>): NotificationItem =>
  parseStored(NotificationItem, "notification", { entity: "notification", read: false, ...item });

/** A stored item as a NotificationReceiptItem. */
export const notificationReceiptItemOf = (item: Record<string, unknown>): NotificationReceiptItem =>
  parseStored(NotificationReceiptItem, "notification receipt", { entity: "notificationReceipt", ...item });

export const notificationKeys = {
  /** The partition of an inbox. */
  inbox: (scope: NotificationScope): string =>
    scope.kind === "system"
      ? keys.systemNotificationPartition()
      : scope.kind === "user"
        ? keys.userNotificationPartition(scope.userId)
        : keys.clientNotificationPartition(scope.clientId),
  item: (scope: NotificationScope, notificationId: string) => ({
    pKey: notificationKeys.inbox(scope),
    sKey: notificationId,
  }),
  receipt: keys.systemNotificationReceipt,
} as const;

/** Writes a new notification into its inbox. */
export async function putNotification(item: NotificationItem): Promise<void> {
  await homeDb().send(new PutCommand({ TableName: tableName(), Item: item }));
}

/**
 * Writes a notification whose id is derived from what it reports (a usage digest): a conditional
 * put, so a second write of the same id changes nothing. True when this call created it.
 */
export async function putNotificationIfAbsent(item: NotificationItem): Promise<boolean> {
  try {
    await homeDb().send(
      new PutCommand({
        TableName: tableName(),
        Item: item,
        ConditionExpression: "attribute_not_exists(pKey)",
      }),
    );
    return true;
  } catch (error) {
    if (isConditionalCheckFailure(error)) return false;
    throw error;
  }
}

/**
 * Claims the sending of a notification's e-mail: true for exactly one caller until the e-mail is
 * recorded sent, or until a claim older than `staleBefore` (a sender that crashed) is taken over.
 */
export async function claimNotificationEmail(
  scope: NotificationScope,
  notificationId: string,
  staleBefore: string,
): Promise<boolean> {
  try {
    await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: notificationKeys.item(scope, notificationId),
        UpdateExpression: "SET emailClaimedAt = :now",
        ConditionExpression:
          "attribute_exists(pKey) AND attribute_not_exists(emailSentAt) AND (attribute_not_exists(emailClaimedAt) OR emailClaimedAt < :stale)",
        ExpressionAttributeValues: { ":now": nowIso(), ":stale": staleBefore },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionalCheckFailure(error)) return false;
    throw error;
  }
}

/** Records a claimed e-mail as sent (to how many recipients). */
export async function recordNotificationEmailSent(
  scope: NotificationScope,
  notificationId: string,
  recipients: number,
): Promise<void> {
  await homeDb().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: notificationKeys.item(scope, notificationId),
      UpdateExpression: "SET emailSentAt = :now, emailRecipients = :recipients REMOVE emailClaimedAt",
      ConditionExpression: "attribute_exists(pKey)",
      ExpressionAttributeValues: { ":now": nowIso(), ":recipients": recipients },
    }),
  );
}

/** Gives a claim back after a failed send, so the next run sends it. */
export async function releaseNotificationEmailClaim(
  scope: NotificationScope,
  notificationId: string,
): Promise<void> {
  try {
    await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: notificationKeys.item(scope, notificationId),
        UpdateExpression: "REMOVE emailClaimedAt",
        ConditionExpression: "attribute_exists(pKey) AND attribute_not_exists(emailSentAt)",
      }),
    );
  } catch (error) {
    if (!isConditionalCheckFailure(error)) throw error;
  }
}

/** Access patterns "system / user / client notifications, newest first": one Query, expired filtered. */
export async function listNotificationsOfInbox(scope: NotificationScope): Promise<NotificationItem[]> {
  const items = await queryPartition(notificationKeys.inbox(scope), { newestFirst: true });
  return items.filter((item) => !isExpired(item)).map(notificationItemOf);
}

/** A notification by inbox and id: a consistent GetItem; an expired one is not found. */
export async function findNotification(
  scope: NotificationScope,
  notificationId: string,
): Promise<NotificationItem | undefined> {
  const result = await homeDb().send(
    new GetCommand({
      TableName: tableName(),
      Key: notificationKeys.item(scope, notificationId),
      ConsistentRead: true,
    }),
  );
  return result.Item && !isExpired(result.Item) ? notificationItemOf(result.Item) : undefined;
}

/**
 * Marks a user or client notification read (the first read time is kept) and returns it; undefined
 * when there is no such notification or it has expired.
 */
export async function markNotificationRead(
  scope: NotificationScope,
  notificationId: string,
): Promise<NotificationItem | undefined> {
  try {
    const result = await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: notificationKeys.item(scope, notificationId),
        UpdateExpression: "SET #read = :true, readAt = if_not_exists(readAt, :now)",
        ConditionExpression: "attribute_exists(pKey) AND (attribute_not_exists(#ttl) OR #ttl > :nowSec)",
        ExpressionAttributeNames: { "#read": "read", "#ttl": "TTL" },
        ExpressionAttributeValues: { ":true": true, ":now": nowIso(), ":nowSec": nowSeconds() },
        ReturnValues: "ALL_NEW",
      }),
    );
    return notificationItemOf(result.Attributes ?? {});
  } catch (error) {
    if (isConditionalCheckFailure(error)) return undefined;
    throw error;
  }
}

/** Records that `readerId` has read a system notification; the receipt expires with it. */
export async function putReadReceipt(readerId: string, notification: NotificationItem): Promise<void> {
  const receipt: NotificationReceiptItem = {
    ...notificationKeys.receipt(readerId, notification.notificationId),
    entity: "notificationReceipt",
    readAt: nowIso(),
    TTL: notification.TTL,
  };
  await homeDb().send(new PutCommand({ TableName: tableName(), Item: receipt }));
}

/** Access pattern "a user's system-notification read receipts": BatchGetItem for a page; the ids read. */
export async function readIdsOfUser(
  readerId: string,
  notificationIds: readonly string[],
): Promise<Set<string>> {
  const receipts = await batchGet(notificationIds.map((id) => notificationKeys.receipt(readerId, id)));
  return new Set(receipts.map(notificationReceiptItemOf).map((receipt) => receipt.sKey));
}
