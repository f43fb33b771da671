/**
 * The invite entity (spec 2.3) as stored: the invite item and its e-mail lock, their keys and the
 * access patterns that read them (docs/access-patterns.md). The domain (lib/domain/invites.ts)
 * works on InviteItem, never on an untyped item, so no `String(item.x)` coercion is needed.
 */
import { z } from "zod";
import { CLIENT_ROLES } from "../../domain/roles.ts";
import { GetCommand } from "../document-client.ts";
import { CLIENT_SK, keys } from "../keys.ts";
import { homeDb, isExpired, parseStored, queryAll, queryPartition, tableName } from "../store.ts";

export const InviteItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  gsi1pk: z.string(),
  gsi1sk: z.string(),
  entity: z.literal("invite"),
  inviteId: z.string(),
  clientId: z.string(),
  /** The inviting client's name when the invite was made. */
  clientName: z.string(),
  roles: z.array(z.enum(CLIENT_ROLES)),
  /** The invitee's address, lower case. */
  userEmail: z.string(),
  invitedBy: z.string().optional(),
  inviteCreated: z.string().optional(),
  inviteUpdated: z.string().optional(),
  /** Expiry, Unix seconds (the table's TTL attribute). */
  TTL: z.number().int(),
});
export type InviteItem = z.infer<typeof InviteItem>;

/** The lock that makes a second pending invite for the same (client, e-mail) a conditional-write failure. */
export const InviteEmailLockItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("inviteEmailLock"),
  /** The invite holding the lock. */
  inviteId: z.string(),
  /** The invite's expiry: an expired invite's lock no longer counts. */
  TTL: z.number().int(),
});
export type InviteEmailLockItem = z.infer<typeof InviteEmailLockItem>;

/** A stored item as an InviteItem; an item that is not one is a defect of the store, not of the caller. */
export const inviteItemOf = (item: Record<string, unknown>): InviteItem =>
  parseStored(InviteItem, "invite", { entity: "invite", ...item });

export const inviteKeys = {
  item: keys.invite,
  emailLock: keys.inviteEmailLock,
  /** GSI1 keys: the invites addressed to an e-mail. */
  byEmail: keys.inviteByEmailIndex,
} as const;

/** Access pattern "invite by id (client side)": a consistent GetItem; an expired invite is not found. */
export async function findPendingInvite(clientId: string, inviteId: string): Promise<InviteItem | undefined> {
  const result = await homeDb().send(
    new GetCommand({
      TableName: tableName(),
      Key: inviteKeys.item(clientId, inviteId),
      ConsistentRead: true,
    }),
  );
  return result.Item && !isExpired(result.Item) ? inviteItemOf(result.Item) : undefined;
}

/** Access pattern "pending invites of a client": one Query on the client partition, expired filtered. */
export async function listPendingInvitesOfClient(clientId: string): Promise<InviteItem[]> {
  const items = await queryPartition(keys.clientPartition(clientId), { sKeyPrefix: CLIENT_SK.invitePrefix });
  return items.filter((item) => !isExpired(item)).map(inviteItemOf);
}

/** Access pattern "invites addressed to a user": one GSI1 Query on the e-mail, expired filtered. */
export async function listPendingInvitesAddressedTo(email: string): Promise<InviteItem[]> {
  const items = await queryAll({
    IndexName: "GSI1",
    KeyConditionExpression: "gsi1pk = :pk AND begins_with(gsi1sk, :prefix)",
    ExpressionAttributeValues: { ":pk": inviteKeys.byEmail(email, "").gsi1pk, ":prefix": "INVITE#" },
  });
  return items.filter((item) => item.entity === "invite" && !isExpired(item)).map(inviteItemOf);
}

/**
 * Access pattern "invitee's invite by id": the GSI1 entry finds the client, then a consistent
 * GetItem confirms the invite (the index is eventually consistent) and that it is addressed to
 * this e-mail.
 */
export async function findPendingInviteAddressedTo(
  email: string,
  inviteId: string,
): Promise<InviteItem | undefined> {
  const index = inviteKeys.byEmail(email, inviteId);
  const hits = await queryAll({
    IndexName: "GSI1",
    KeyConditionExpression: "gsi1pk = :pk AND gsi1sk = :sk",
    ExpressionAttributeValues: { ":pk": index.gsi1pk, ":sk": index.gsi1sk },
  });
  const hit = hits.find((item) => item.entity === "invite");
  if (!hit) return undefined;
  const invite = await findPendingInvite(inviteItemOf(hit).clientId, inviteId);
  return invite?.userEmail === email ? invite : undefined;
}
