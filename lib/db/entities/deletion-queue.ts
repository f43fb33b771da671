/**
 * The deletion work queue (spec 4.1, 4.4; lib/domain/account-deletion.ts): a client or user whose
 * deletion is scheduled carries the GSI2 keys `DELETION#CLIENT` / `DELETION#USER` and
 * `<due ISO>#<pKey>`, so the hourly purge finds what is due with one Query on GSI2, oldest first.
 * The queue holds no items of its own: an entry is the client or user item itself (GSI2 projects
 * every attribute), read here as the few fields the purge needs.
 */
import { z } from "zod";
import { UpdateCommand } from "#lib/aws/document-client.ts";
import { type Key, keys } from "#lib/db/keys.ts";
import { homeDb, isConditionalCheckFailure, keyOf, parseStored, queryAll, tableName } from "#lib/db/store.ts";

export type DeletionKind = "CLIENT" | "USER";

const queued = {
  pKey: z.string(),
  sKey: z.string(),
  gsi2pk: z.string(),
  gsi2sk: z.string(),
  /** Who asked; absent on entries queued before it was recorded. */
  deletionRequestedBy: z.string().optional(),
};

/** A client due for its purge. */
export const QueuedClientDeletion = z.object({
  ...queued,
  entity: z.literal("client"),
  clientId: z.string(),
});
/** A user due for deletion. */
export const QueuedUserDeletion = z.object({ ...queued, entity: z.literal("user"), userId: z.string() });

export const DeletionQueueEntry = z.discriminatedUnion("entity", [QueuedClientDeletion, QueuedUserDeletion]);
export type DeletionQueueEntry = z.infer<typeof DeletionQueueEntry>;

const ENTITY_OF_KIND = { CLIENT: "client", USER: "user" } as const;

/** A queue entry of `kind` as typed fields (an item of the other kind is refused); throws naming the fields that fail. */
export const deletionQueueEntryOf = (kind: DeletionKind, item: Record<string, unknown>): DeletionQueueEntry =>
  parseStored(kind === "CLIENT" ? QueuedClientDeletion : QueuedUserDeletion, "deletion queue entry", {
    entity: ENTITY_OF_KIND[kind],
    ...item,
  });

export const deletionQueueKeys = {
  /** GSI2 keys of an entry: the queue of its kind, ordered by due time (the item's pKey breaks ties). */
  entry: (kind: DeletionKind, dueAtIso: string, itemKey: Key) => ({
    gsi2pk: keys.deletionQueue(kind, dueAtIso).gsi2pk,
    gsi2sk: `${keys.deletionQueue(kind, dueAtIso).gsi2sk}#${itemKey.pKey}`,
  }),
  queue: (kind: DeletionKind) => keys.deletionQueue(kind, "").gsi2pk,
} as const;

/**
 * Puts a client or user item in the deletion queue: marks it `pendingDeletion` with its due time
 * and who asked. A second request keeps the first due time. False when there is no such item.
 */
export async function queueForDeletion(
  kind: DeletionKind,
  itemKey: Key,
  dueAtIso: string,
  requestedBy: string,
): Promise<boolean> {
  const prefix = ENTITY_OF_KIND[kind];
  const entry = deletionQueueKeys.entry(kind, dueAtIso, itemKey);
  try {
    await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: itemKey,
        UpdateExpression: `SET ${prefix}Status = :pending, ${prefix}DeletionScheduledAt = if_not_exists(${prefix}DeletionScheduledAt, :due), deletionRequestedBy = :by, gsi2pk = :queue, gsi2sk = if_not_exists(gsi2sk, :sort)`,
        ConditionExpression: "attribute_exists(pKey)",
        ExpressionAttributeValues: {
          ":pending": "pendingDeletion",
          ":due": dueAtIso,
          ":by": requestedBy,
          ":queue": entry.gsi2pk,
          ":sort": entry.gsi2sk,
        },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionalCheckFailure(error)) return false;
    throw error;
  }
}

/**
 * Takes a client or user item out of the deletion queue (a user who signs in with
 * `cancelDeletion`, docs/accounts.md#recovery-ends-every-way-in): its status, due time, requester and GSI2 keys removed, conditioned on
 * it being queued. Answers the item as it is now (undefined when it was not queued, or is gone).
 */
export async function unqueueDeletion(
  kind: DeletionKind,
  itemKey: Key,
): Promise<Record<string, unknown> | undefined> {
  const prefix = ENTITY_OF_KIND[kind];
  try {
    const result = await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: itemKey,
        UpdateExpression: `REMOVE ${prefix}Status, ${prefix}DeletionScheduledAt, deletionRequestedBy, gsi2pk, gsi2sk`,
        ConditionExpression: `attribute_exists(pKey) AND ${prefix}Status = :pending`,
        ExpressionAttributeValues: { ":pending": "pendingDeletion" },
        ReturnValues: "ALL_NEW",
      }),
    );
    return result.Attributes;
  } catch (error) {
    if (isConditionalCheckFailure(error)) return undefined;
    throw error;
  }
}

/**
 * Access pattern "clients / users due for deletion": one Query on GSI2, `gsi2sk <= <now ISO>#~`,
 * oldest first. An entry that does not read as one is returned apart, with why, so that one broken
 * item does not stop the purge of the others.
 */
export async function listDueDeletions(
  kind: DeletionKind,
  now: Date,
): Promise<{ due: DeletionQueueEntry[]; unreadable: { key: Key; problem: string }[] }> {
  const items = await queryAll({
    IndexName: "GSI2",
    KeyConditionExpression: "gsi2pk = :queue AND gsi2sk <= :now",
    ExpressionAttributeValues: {
      ":queue": deletionQueueKeys.queue(kind),
      ":now": `${now.toISOString()}#~`,
    },
  });
  const result: Awaited<ReturnType<typeof listDueDeletions>> = { due: [], unreadable: [] };
  for (const item of items) {
    try {
      result.due.push(deletionQueueEntryOf(kind, item));
    } catch (error) {
      result.unreadable.push({ key: keyOf(item), problem: (error as Error).message });
    }
  }
  return result;
}
