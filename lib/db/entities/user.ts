/**
 * The user entity (spec 2.4) as stored: the user item and its e-mail uniqueness item, their keys
 * and the access patterns that read them (docs/access-patterns.md). The domain (lib/domain/users.ts,
 * lib/domain/tokens.ts, lib/domain/authorizer.ts) works on UserItem, never on an untyped item.
 */
import { z } from "zod";
import { GetCommand } from "#lib/aws/document-client.ts";
import { keys } from "#lib/db/keys.ts";
import { homeDb, parseStored, tableName } from "#lib/db/store.ts";
import { StoredTokenRef } from "./token.ts";

/** A DynamoDB string set as the document client returns it (a Set); absent when empty. */
const stringSet = z.set(z.string()).default(() => new Set<string>());

export const UserItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("user"),
  userId: z.string(),
  /** Lower case; unique through the e-mail item. */
  userEmail: z.string(),
  userUsername: z.string().default(""),
  userFirstName: z.string().default(""),
  userLastName: z.string().default(""),
  userPhone: z.string().default(""),
  userBio: z.string().default(""),
  systemAdmin: z.boolean().default(false),
  /** The user's tokens by token id (masked; the raw token is never stored). */
  tokens: z.record(z.string(), StoredTokenRef).default({}),
  /** Ids of the clients the user is a member of (ADD / DELETE by the membership transactions). */
  userClients: stringSet,
  /** Ids of the MSPs the user belongs to. */
  userMsps: stringSet,
  /** Set while the account waits for its deletion (spec 4.4), with the due time and who asked. */
  userStatus: z.literal("pendingDeletion").optional(),
  userDeletionScheduledAt: z.string().optional(),
  deletionRequestedBy: z.string().optional(),
  /** GSI2 keys while queued for deletion. */
  gsi2pk: z.string().optional(),
  gsi2sk: z.string().optional(),
  userCreated: z.string(),
  userUpdated: z.string(),
});
export type UserItem = z.infer<typeof UserItem>;
/** The user item as written (string sets are omitted while empty: DynamoDB has no empty set). */
export type NewUserItem = Omit<UserItem, "userClients" | "userMsps">;

/** The item that makes an e-mail address unique and finds the account by address. */
export const UserEmailItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("userEmail"),
  userId: z.string(),
});
export type UserEmailItem = z.infer<typeof UserEmailItem>;

/** A stored item as a UserItem (defaults for fields older items lack); throws naming the failing fields. */
export const userItemOf = (item: Record<string, unknown>): UserItem =>
  parseStored(UserItem, "user", { entity: "user", ...item });

/** A stored e-mail item as a UserEmailItem; throws naming the failing fields. */
export const userEmailItemOf = (item: Record<string, unknown>): UserEmailItem =>
  parseStored(UserEmailItem, "user e-mail", { entity: "userEmail", ...item });

export const userKeys = {
  item: keys.user,
  /** The e-mail uniqueness item (the address is lower-cased by the key builder). */
  email: keys.userEmail,
} as const;

/** Access pattern "user by id": a consistent GetItem. */
export async function findUser(userId: string): Promise<UserItem | undefined> {
  const result = await homeDb().send(
    new GetCommand({ TableName: tableName(), Key: userKeys.item(userId), ConsistentRead: true }),
  );
  return result.Item ? userItemOf(result.Item) : undefined;
}

/** Access pattern "user by e-mail": a consistent GetItem on the e-mail item. */
export async function findUserIdByEmail(email: string): Promise<string | undefined> {
  const result = await homeDb().send(
    new GetCommand({ TableName: tableName(), Key: userKeys.email(email), ConsistentRead: true }),
  );
  return result.Item ? userEmailItemOf(result.Item).userId : undefined;
}
