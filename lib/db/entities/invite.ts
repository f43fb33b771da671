/**
 * The invite entity (spec 2.3) as stored: the invite item and its e-mail lock, their keys and the
 * access patterns that read them (docs/access-patterns.md). The domain (lib/domain/invites.ts)
 * works on InviteItem, never on an untyped item, so no `String(item.x)` coercion is needed.
 */
import { z } from "zod";
import { GetCommand } from "#lib/aws/document-client.ts";
import { CLIENT_SK, type Key, keys } from "#lib/db/keys.ts";
import { homeDb, isExpired, parseStored, queryAll, queryPartition, tableName } from "#lib/db/store.ts";
import { CLIENT_ROLES } from "#lib/shared/roles.ts";

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

/**
 * Where an invite kind lives (client and MSP invites alike): in its parent's partition under a
 * sort-key prefix, with a GSI1 entry under the invitee's e-mail and one e-mail lock per (parent,
 * e-mail).
 */
export interface InviteKind<I> {
  /** The stored item's `entity`. */
  entity: string;
  /** The lock item's `entity`. */
  lockEntity: string;
  /** A stored item as the kind's typed invite (throws naming the fields that fail). */
  itemOf: (item: Record<string, unknown>) => I;
  parentIdOf: (invite: I) => string;
  keys: {
    item: (parentId: string, inviteId: string) => Key;
    emailLock: (parentId: string, email: string) => Key;
    byEmail: (email: string, inviteId: string) => { gsi1pk: string; gsi1sk: string };
    partition: (parentId: string) => string;
    /** The sort-key prefix of the invites in the parent's partition. */
    prefix: string;
  };
}

/** The access patterns of one invite kind; TTL-expired invites are filtered on every read. */
export function inviteReads<I extends { userEmail: string }>(kind: InviteKind<I>) {
  /** "Invite by id (parent side)": a consistent GetItem; an expired invite is not found. */
  async function findPending(parentId: string, inviteId: string): Promise<I | undefined> {
    const result = await homeDb().send(
      new GetCommand({
        TableName: tableName(),
        Key: kind.keys.item(parentId, inviteId),
        ConsistentRead: true,
      }),
    );
    return result.Item && !isExpired(result.Item) ? kind.itemOf(result.Item) : undefined;
  }
  return {
    findPending,
    /** "Pending invites of a parent": one Query on its partition, expired filtered. */
    async listPendingOf(parentId: string): Promise<I[]> {
      const items = await queryPartition(kind.keys.partition(parentId), { sKeyPrefix: kind.keys.prefix });
      return items.filter((item) => !isExpired(item)).map(kind.itemOf);
    },
    /** "Invites addressed to a user": one GSI1 Query on the e-mail, expired filtered. */
    async listPendingAddressedTo(email: string): Promise<I[]> {
      const index = kind.keys.byEmail(email, "");
      const items = await queryAll({
        IndexName: "GSI1",
        KeyConditionExpression: "gsi1pk = :pk AND begins_with(gsi1sk, :prefix)",
        ExpressionAttributeValues: { ":pk": index.gsi1pk, ":prefix": index.gsi1sk },
      });
      return items.filter((item) => item.entity === kind.entity && !isExpired(item)).map(kind.itemOf);
    },
    /**
     * "Invitee's invite by id": the GSI1 entry finds the parent, then a consistent GetItem confirms
     * the invite (the index is eventually consistent) and that it is addressed to this e-mail.
     */
    async findPendingAddressedTo(email: string, inviteId: string): Promise<I | undefined> {
      const index = kind.keys.byEmail(email, inviteId);
      const hits = await queryAll({
        IndexName: "GSI1",
        KeyConditionExpression: "gsi1pk = :pk AND gsi1sk = :sk",
        ExpressionAttributeValues: { ":pk": index.gsi1pk, ":sk": index.gsi1sk },
      });
      const hit = hits.find((item) => item.entity === kind.entity);
      if (!hit) return undefined;
      const invite = await findPending(kind.parentIdOf(kind.itemOf(hit)), inviteId);
      return invite?.userEmail === email.toLowerCase() ? invite : undefined;
    },
  };
}

/** The client invite kind: in the client's partition, `INVITE#<inviteId>`. */
export const clientInviteKind: InviteKind<InviteItem> = {
  entity: "invite",
  lockEntity: "inviteEmailLock",
  itemOf: inviteItemOf,
  parentIdOf: (invite) => invite.clientId,
  keys: { ...inviteKeys, partition: keys.clientPartition, prefix: CLIENT_SK.invitePrefix },
};

const clientInvites = inviteReads(clientInviteKind);
export const {
  /** Access pattern "invite by id (client side)". */
  findPending: findPendingInvite,
  /** Access pattern "pending invites of a client". */
  listPendingOf: listPendingInvitesOfClient,
  /** Access pattern "invites addressed to a user". */
  listPendingAddressedTo: listPendingInvitesAddressedTo,
  /** Access pattern "invitee's invite by id". */
  findPendingAddressedTo: findPendingInviteAddressedTo,
} = clientInvites;
