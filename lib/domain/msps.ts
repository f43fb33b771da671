/**
 * Managed-service providers (spec 2.14 configuration, 4.14 API). An MSP's partition MSP#<mspId>
 * holds the MSP item, its configuration, its members (MEMBER#<userId>) and, later, the clients it
 * manages and its invites (keys.ts). A user's MSPs are the `userMsps` string set on the user.
 *
 * Today operators create MSPs with the admin CLI (`msps create`); the MSP API extends this module.
 */
import { randomUUID } from "node:crypto";
import { z } from "zod";
import { TransactWriteCommand } from "../db/document-client.ts";
import { keys } from "../db/keys.ts";
import {
  batchGet,
  homeDb,
  type Item,
  nowIso,
  queryPartition,
  tableName,
  transactionConditionFailedAt,
} from "../db/store.ts";
import { notFound } from "./errors.ts";

export const MSP_NOT_FOUND = "MSP not found";
export const MSP_OWNER_NOT_FOUND = "Owner user not found";

/** MSP roles, lowest first (spec 4.14: msp_reader < msp_user < msp_admin < msp_owner). */
export const MSP_ROLES = ["msp_reader", "msp_user", "msp_admin", "msp_owner"] as const;
export type MspRole = (typeof MSP_ROLES)[number];

export const MSP_BILLING_TYPES = ["stripe", "marketplace", "invoice"] as const;
export const MSP_BILLING_STATUSES = ["active", "suspended"] as const;

export const NewMsp = z.object({
  name: z.string().trim().min(1).max(100),
  ownerUserId: z.string().trim().min(1).max(100),
});
export type NewMsp = z.infer<typeof NewMsp>;

export interface MspRates {
  apiSeconds: number;
  storageGB: number;
  aiTokens: number;
  plan: number;
}

/** The configuration every new MSP gets (spec 2.14): Stripe billing, active, retail rates (1 = 100%). */
export function defaultMspConfiguration(input: { mspId: string; createdAt: string }) {
  return {
    configurationType: "msp",
    mspId: input.mspId,
    billingType: "stripe" as (typeof MSP_BILLING_TYPES)[number],
    billingStatus: "active" as (typeof MSP_BILLING_STATUSES)[number],
    promotionalCodes: null as { name: string; createdAt: string; expiresAt: string }[] | null,
    rates: { apiSeconds: 1, storageGB: 1, aiTokens: 1, plan: 1 } satisfies MspRates,
    configCreated: input.createdAt,
    configUpdated: input.createdAt,
  };
}
export type MspConfiguration = ReturnType<typeof defaultMspConfiguration>;

export interface MspMemberRef {
  userId: string;
  roles: string[];
}

export function toApiMsp(item: Item) {
  return {
    mspId: String(item.mspId),
    mspName: String(item.mspName),
    mspCreated: item.mspCreated,
    mspUpdated: item.mspUpdated,
  };
}
export type ApiMsp = ReturnType<typeof toApiMsp>;

export function toApiMspConfiguration(item: Item) {
  return {
    configurationType: "msp",
    mspId: String(item.mspId),
    billingType: item.billingType,
    billingStatus: item.billingStatus,
    promotionalCodes: item.promotionalCodes ?? null,
    rates: item.rates,
    configCreated: item.configCreated,
    configUpdated: item.configUpdated,
  };
}
export type ApiMspConfiguration = ReturnType<typeof toApiMspConfiguration>;

export const mspMemberRef = (item: Item): MspMemberRef => ({
  userId: String(item.userId),
  roles: Array.isArray(item.roles) ? item.roles.map(String) : [],
});

/**
 * Create an MSP and its first `msp_owner` in one TransactWriteItems: the MSP item, its
 * configuration, the owner's member item and `ADD userMsps` on the owner (who must exist).
 * An unknown owner cancels the whole transaction: nothing is written.
 */
export async function createMsp(input: NewMsp): Promise<{
  msp: ApiMsp;
  configuration: ApiMspConfiguration;
  members: MspMemberRef[];
}> {
  const data = NewMsp.parse(input);
  const mspId = randomUUID();
  const now = nowIso();
  const roles: MspRole[] = ["msp_owner"];
  const msp: Item = {
    ...keys.msp(mspId),
    entity: "msp",
    mspId,
    mspName: data.name,
    createdBy: data.ownerUserId,
    mspCreated: now,
    mspUpdated: now,
  };
  const configuration: Item = {
    ...keys.mspConfig(mspId),
    entity: "mspConfig",
    ...defaultMspConfiguration({ mspId, createdAt: now }),
  };
  try {
    await homeDb().send(
      new TransactWriteCommand({
        TransactItems: [
          { Put: { TableName: tableName(), Item: msp, ConditionExpression: "attribute_not_exists(pKey)" } },
          {
            Put: {
              TableName: tableName(),
              Item: configuration,
              ConditionExpression: "attribute_not_exists(pKey)",
            },
          },
          {
            Put: {
              TableName: tableName(),
              Item: {
                ...keys.mspMember(mspId, data.ownerUserId),
                entity: "mspMember",
                mspId,
                userId: data.ownerUserId,
                roles,
                memberCreated: now,
                memberUpdated: now,
              },
              ConditionExpression: "attribute_not_exists(pKey)",
            },
          },
          {
            Update: {
              TableName: tableName(),
              Key: keys.user(data.ownerUserId),
              UpdateExpression: "ADD userMsps :msp SET userUpdated = :now",
              ConditionExpression: "attribute_exists(pKey)",
              ExpressionAttributeValues: { ":msp": new Set([mspId]), ":now": now },
            },
          },
        ],
      }),
    );
  } catch (error) {
    if (transactionConditionFailedAt(error, 3)) throw notFound(MSP_OWNER_NOT_FOUND);
    throw error;
  }
  return {
    msp: toApiMsp(msp),
    configuration: toApiMspConfiguration(configuration),
    members: [{ userId: data.ownerUserId, roles }],
  };
}

/** The MSP and its configuration (one BatchGetItem), or undefined when there is no such MSP. */
export async function getMsp(
  mspId: string,
): Promise<{ msp: ApiMsp; configuration: ApiMspConfiguration | undefined } | undefined> {
  const mspKey = keys.msp(mspId);
  const items = await batchGet([mspKey, keys.mspConfig(mspId)]);
  const msp = items.find((item) => item.sKey === mspKey.sKey);
  if (!msp) return undefined;
  const configuration = items.find((item) => item.sKey === keys.mspConfig(mspId).sKey);
  return { msp: toApiMsp(msp), configuration: configuration && toApiMspConfiguration(configuration) };
}

export async function requireMsp(mspId: string) {
  const found = await getMsp(mspId);
  if (!found) throw notFound(MSP_NOT_FOUND);
  return found;
}

/** Members of an MSP (bounded by the store's list limit). */
export async function listMspMembers(mspId: string): Promise<MspMemberRef[]> {
  const items = await queryPartition(keys.msp(mspId).pKey, { sKeyPrefix: keys.mspMember(mspId, "").sKey });
  return items.map(mspMemberRef);
}
