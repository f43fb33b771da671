/**
 * The member entity (a membership, spec 2.2) as stored: the member item in the client's home
 * partition, its keys and the access patterns that read it (docs/access-patterns.md). The domain
 * (lib/domain/clients.ts, members.ts, access.ts) works on MemberItem, never on an untyped item.
 */
import { z } from "zod";
import { GetCommand } from "#lib/aws/document-client.ts";
import { CLIENT_SK, keys } from "#lib/db/keys.ts";
import { homeDb, parseStored, queryPartition, tableName } from "#lib/db/store.ts";
import { CLIENT_ROLES } from "#lib/shared/roles.ts";

export const MemberItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("member"),
  clientId: z.string(),
  userId: z.string(),
  /** In the order written: the membership transactions condition on the list as stored. */
  roles: z.array(z.enum(CLIENT_ROLES)),
  memberCreated: z.string().optional(),
  memberUpdated: z.string().optional(),
  /** The invite the member joined by; absent for the client's creator. */
  joinedByInvite: z.string().optional(),
});
export type MemberItem = z.infer<typeof MemberItem>;

/** A stored item as a MemberItem; an item that is not one is a defect of the store, not of the caller. */
export const memberItemOf = (item: Record<string, unknown>): MemberItem =>
  parseStored(MemberItem, "member", { entity: "member", ...item });

export const memberKeys = {
  item: keys.member,
  /** The members are the `MEMBER#` items of the client's home partition. */
  partition: keys.clientPartition,
} as const;

/** Access pattern "membership check of one user": a consistent GetItem of `MEMBER#<userId>`. */
export async function findMember(clientId: string, userId: string): Promise<MemberItem | undefined> {
  const result = await homeDb().send(
    new GetCommand({ TableName: tableName(), Key: memberKeys.item(clientId, userId), ConsistentRead: true }),
  );
  return result.Item ? memberItemOf(result.Item) : undefined;
}

/** Access pattern "members of a client": one Query, `begins_with(sKey, MEMBER#)`. */
export async function listMembersOfClient(clientId: string): Promise<MemberItem[]> {
  const items = await queryPartition(memberKeys.partition(clientId), { sKeyPrefix: CLIENT_SK.memberPrefix });
  return items.map(memberItemOf);
}
