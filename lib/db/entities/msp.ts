/**
 * The managed-service provider (spec 2.14, 4.14) as stored: the MSP item, its configuration, its
 * members and the links to the clients it manages, all in the MSP's partition `MSP#<mspId>` of
 * the home table; their keys and the access patterns that read them (docs/access-patterns.md).
 * The domain (lib/domain/msps.ts) works on these types, never on an untyped item.
 */
import { z } from "zod";
import { GetCommand } from "#lib/aws/document-client.ts";
import { keys } from "#lib/db/keys.ts";
import { batchGet, homeDb, parseStored, queryPartition, tableName } from "#lib/db/store.ts";
import { MSP_ROLES } from "#lib/shared/roles.ts";
import { type InviteKind, inviteReads } from "./invite.ts";

export const MSP_BILLING_TYPES = ["stripe", "marketplace", "invoice"] as const;
export const MSP_BILLING_STATUSES = ["active", "suspended"] as const;

/** An MSP's partition holds at most this many members or client links in one list (every list is bounded). */
export const MAX_MSP_LIST_ITEMS = 1000;

export const MspItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("msp"),
  mspId: z.string(),
  mspName: z.string(),
  /** The user who was made its first msp_owner. */
  createdBy: z.string().optional(),
  mspCreated: z.string(),
  mspUpdated: z.string(),
  /**
   * Incremented by every change to the MSP's members' roles or membership: a change decided from a
   * listing of the members (the last msp_owner and msp_admin rules) commits only if it is unchanged.
   */
  memberVersion: z.number().int().default(0),
});
export type MspItem = z.infer<typeof MspItem>;

/** The fraction of the retail price the MSP pays per metric (1 = 100%). */
export const MspRates = z.object({
  apiSeconds: z.number(),
  storageGB: z.number(),
  aiTokens: z.number(),
  plan: z.number(),
});
export type MspRates = z.infer<typeof MspRates>;

export const MspConfigItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("mspConfig"),
  configurationType: z.literal("msp"),
  mspId: z.string(),
  billingType: z.enum(MSP_BILLING_TYPES),
  billingStatus: z.enum(MSP_BILLING_STATUSES),
  promotionalCodes: z
    .array(z.object({ name: z.string(), createdAt: z.string(), expiresAt: z.string() }))
    .nullable(),
  rates: MspRates,
  /** The MSP's customer with the payment processor (billing its managed clients), or null. */
  paymentCustomerId: z.string().nullable().default(null),
  /**
   * Whether the MSP put a payment method on file through Checkout in setup mode (the webhook sets
   * it; lib/domain/msp-payment-method.ts), when, and the `created` time (seconds) of the Stripe
   * event that did, so an older completion never replaces a newer method.
   */
  paymentMethodOnFile: z.boolean().default(false),
  paymentMethodUpdated: z.string().nullable().default(null),
  paymentMethodEventAt: z.number().nullable().default(null),
  configCreated: z.string(),
  configUpdated: z.string(),
});
export type MspConfigItem = z.infer<typeof MspConfigItem>;

export const MspMemberItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("mspMember"),
  mspId: z.string(),
  userId: z.string(),
  /** In the order written. */
  roles: z.array(z.enum(MSP_ROLES)),
  memberCreated: z.string().optional(),
  memberUpdated: z.string().optional(),
});
export type MspMemberItem = z.infer<typeof MspMemberItem>;

/** The link of a managed client to its MSP (written by the MSP API when it creates or adopts a client). */
export const MspClientItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("mspClient"),
  mspId: z.string(),
  clientId: z.string(),
  linkedAt: z.string(),
});
export type MspClientItem = z.infer<typeof MspClientItem>;

/** A pending MSP invite (spec 2.3a): in the MSP's partition, found by the invitee through GSI1. */
export const MspInviteItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  gsi1pk: z.string(),
  gsi1sk: z.string(),
  entity: z.literal("mspInvite"),
  inviteId: z.string(),
  mspId: z.string(),
  /** The MSP's name when the invite was made. */
  mspName: z.string(),
  roles: z.array(z.enum(MSP_ROLES)),
  /** The invitee's address, lower case. */
  userEmail: z.string(),
  invitedBy: z.string().optional(),
  inviteCreated: z.string(),
  inviteUpdated: z.string(),
  /** Expiry as a timestamp, and the same as Unix seconds (the table's TTL attribute). */
  inviteExpiry: z.string(),
  TTL: z.number().int(),
});
export type MspInviteItem = z.infer<typeof MspInviteItem>;

/** One pending invite per (MSP, e-mail): a second one is a conditional-write failure. */
export const MspInviteEmailLockItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("mspInviteEmailLock"),
  inviteId: z.string(),
  TTL: z.number().int(),
});
export type MspInviteEmailLockItem = z.infer<typeof MspInviteEmailLockItem>;

/** A stored item as an MspInviteItem; throws naming the fields that fail. */
export const mspInviteItemOf = (item: Record<string, unknown>): MspInviteItem =>
  parseStored(MspInviteItem, "MSP invite", { entity: "mspInvite", ...item });

/** A stored item as an MspItem; throws naming the fields that fail. */
export const mspItemOf = (item: Record<string, unknown>): MspItem =>
  parseStored(MspItem, "MSP", { entity: "msp", ...item });

/** A stored item as an MspConfigItem; promotional codes never written read as none. */
export const mspConfigItemOf = (item: Record<string, unknown>): MspConfigItem =>
  parseStored(MspConfigItem, "MSP configuration", {
    entity: "mspConfig",
    configurationType: "msp",
    promotionalCodes: null,
    ...item,
  });

/** A stored item as an MspMemberItem; throws naming the fields that fail. */
export const mspMemberItemOf = (item: Record<string, unknown>): MspMemberItem =>
  parseStored(MspMemberItem, "MSP member", { entity: "mspMember", ...item });

/** A stored item as an MspClientItem; throws naming the fields that fail. */
export const mspClientItemOf = (item: Record<string, unknown>): MspClientItem =>
  parseStored(MspClientItem, "MSP client link", { entity: "mspClient", ...item });

export const mspKeys = {
  item: keys.msp,
  config: keys.mspConfig,
  member: keys.mspMember,
  client: keys.mspClient,
  invite: keys.mspInvite,
  inviteEmailLock: keys.mspInviteEmailLock,
  inviteByEmail: keys.mspInviteByEmailIndex,
  /** The MSP's partition: the MSP, its configuration, members, client links and invites. */
  partition: (mspId: string) => keys.msp(mspId).pKey,
  memberPrefix: keys.mspMember("", "").sKey,
  clientPrefix: keys.mspClient("", "").sKey,
  invitePrefix: keys.mspInvite("", "").sKey,
} as const;

async function getHomeItem(key: { pKey: string; sKey: string }) {
  const result = await homeDb().send(
    new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: true }),
  );
  return result.Item;
}

/** Access pattern "MSP membership check of one user" (every MSP route): a consistent GetItem. */
export async function findMspMember(mspId: string, userId: string): Promise<MspMemberItem | undefined> {
  const item = await getHomeItem(mspKeys.member(mspId, userId));
  return item ? mspMemberItemOf(item) : undefined;
}

/** Access pattern "MSP": a consistent GetItem of the MSP item alone. */
export async function findMsp(mspId: string): Promise<MspItem | undefined> {
  const item = await getHomeItem(mspKeys.item(mspId));
  return item ? mspItemOf(item) : undefined;
}

/** Access pattern "client linked to an MSP" (every MSP route on a client): a consistent GetItem. */
export async function findMspClientLink(mspId: string, clientId: string): Promise<MspClientItem | undefined> {
  const item = await getHomeItem(mspKeys.client(mspId, clientId));
  return item ? mspClientItemOf(item) : undefined;
}

/** The MSP invite kind: in the MSP's partition, `INVITE#<inviteId>`, found by the invitee through GSI1 `MSPINVITE#`. */
export const mspInviteKind: InviteKind<MspInviteItem> = {
  entity: "mspInvite",
  lockEntity: "mspInviteEmailLock",
  itemOf: mspInviteItemOf,
  parentIdOf: (invite) => invite.mspId,
  keys: {
    item: mspKeys.invite,
    emailLock: mspKeys.inviteEmailLock,
    byEmail: mspKeys.inviteByEmail,
    partition: mspKeys.partition,
    prefix: mspKeys.invitePrefix,
  },
};

export const {
  /** Access pattern "MSP invite by id": a consistent GetItem; an expired invite is not found. */
  findPending: findPendingMspInvite,
  /** Access pattern "MSP invites": one Query, `begins_with(sKey, INVITE#)`, expired filtered. */
  listPendingOf: listPendingInvitesOfMsp,
  /** Access pattern "MSP invites addressed to a user": one GSI1 Query, `begins_with(gsi1sk, MSPINVITE#)`. */
  listPendingAddressedTo: listPendingMspInvitesAddressedTo,
  /** Access pattern "invitee's MSP invite by id": the GSI1 entry, then a consistent GetItem. */
  findPendingAddressedTo: findPendingMspInviteAddressedTo,
} = inviteReads(mspInviteKind);

/** Access pattern "MSP" with "MSP configuration": one BatchGetItem; undefined when there is no MSP. */
export async function findMspWithConfig(
  mspId: string,
): Promise<{ msp: MspItem; config: MspConfigItem | undefined } | undefined> {
  const items = await batchGet([mspKeys.item(mspId), mspKeys.config(mspId)]);
  const msp = items.find((item) => item.sKey === mspKeys.item(mspId).sKey);
  if (!msp) return undefined;
  const config = items.find((item) => item.sKey === mspKeys.config(mspId).sKey);
  return { msp: mspItemOf(msp), config: config && mspConfigItemOf(config) };
}

/** Access pattern "MSP members": one Query, `begins_with(sKey, MEMBER#)`. */
export async function listMembersOfMsp(mspId: string): Promise<MspMemberItem[]> {
  const items = await queryPartition(mspKeys.partition(mspId), {
    sKeyPrefix: mspKeys.memberPrefix,
    max: MAX_MSP_LIST_ITEMS,
  });
  return items.map(mspMemberItemOf);
}

/** Access pattern "clients managed by an MSP": one Query, `begins_with(sKey, CLIENT#)`. */
export async function listClientLinksOfMsp(mspId: string): Promise<MspClientItem[]> {
  const items = await queryPartition(mspKeys.partition(mspId), {
    sKeyPrefix: mspKeys.clientPrefix,
    max: MAX_MSP_LIST_ITEMS,
  });
  return items.map(mspClientItemOf);
}
