/**
 * The client entity (spec 2.1) as stored: the client item in its home partition, its keys and the
 * access pattern that reads it (docs/access-patterns.md). The domain (lib/domain/clients.ts and
 * lib/domain/members.ts) works on ClientItem, never on an untyped item, so no `Number(item.x)`
 * coercion of the role counts is needed.
 */
import { z } from "zod";
import { GetCommand } from "#lib/aws/document-client.ts";
import { keys } from "#lib/db/keys.ts";
import { homeDb, parseStored, tableName } from "#lib/db/store.ts";

export const ClientItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("client"),
  clientId: z.string(),
  clientName: z.string(),
  clientStatus: z.enum(["active", "pendingDeletion"]),
  /** Counts kept in the membership transactions: they guard the last-admin and last-owner rules. */
  memberCount: z.number().int(),
  adminCount: z.number().int(),
  ownerCount: z.number().int(),
  createdBy: z.string().optional(),
  clientCreated: z.string(),
  clientUpdated: z.string(),
  /** Set when the deletion is scheduled (lib/domain/account-deletion.ts), with the deletion queue keys. */
  clientDeletionScheduledAt: z.string().optional(),
  deletionRequestedBy: z.string().optional(),
  gsi2pk: z.string().optional(),
  gsi2sk: z.string().optional(),
});
export type ClientItem = z.infer<typeof ClientItem>;

/** A stored item as a ClientItem; an item that is not one is a defect of the store, not of the caller. */
export const clientItemOf = (item: Record<string, unknown>): ClientItem =>
  parseStored(ClientItem, "client", {
    entity: "client",
    clientStatus: "active",
    memberCount: 0,
    adminCount: 0,
    ownerCount: 0,
    ...item,
  });

export const clientKeys = {
  item: keys.client,
  /** The client's home partition: the client item, its configuration, members and invites. */
  partition: keys.clientPartition,
  config: keys.clientConfig,
} as const;

/** Access pattern "client": a consistent GetItem of `CLIENT#<clientId>` / `CLIENT`. */
export async function findClient(clientId: string): Promise<ClientItem | undefined> {
  const result = await homeDb().send(
    new GetCommand({ TableName: tableName(), Key: clientKeys.item(clientId), ConsistentRead: true }),
  );
  return result.Item ? clientItemOf(result.Item) : undefined;
}
