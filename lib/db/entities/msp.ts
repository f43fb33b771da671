/**
 * The managed-service provider (spec 2.14, 4.14) as stored: the MSP item, its configuration, its
 * members and the links to the clients it manages, all in the MSP's partition `MSP#<mspId>` of
 * the home table; their keys and the access patterns that read them (docs/access-patterns.md).
 * The domain (lib/domain/msps.ts) works on these types, never on an untyped item.
 */
import { z } from "zod";
import { MSP_ROLES } from "../../domain/roles.ts";
import { keys } from "../keys.ts";
import { batchGet, parseStored, queryPartition } from "../store.ts";

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
  /** The MSP's partition: the MSP, its configuration, members, client links and invites. */
  partition: (mspId: string) => keys.msp(mspId).pKey,
  memberPrefix: keys.mspMember("", "").sKey,
  clientPrefix: keys.mspClient("", "").sKey,
} as const;

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
