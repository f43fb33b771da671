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
import {
  findMspWithConfig,
  listMembersOfMsp,
  type MspConfigItem,
  type MspItem,
  type MspMemberItem,
  mspKeys,
} from "../db/entities/msp.ts";
import { userKeys } from "../db/entities/user.ts";
import {
  cancelledSteps,
  homeDb,
  nowIso,
  type TransactionStep,
  tableName,
  transactItemsOf,
} from "../db/store.ts";
import { notFound } from "./errors.ts";
import type { MspRole } from "./roles.ts";

export const MSP_NOT_FOUND = "MSP not found";
export const MSP_OWNER_NOT_FOUND = "Owner user not found";

export const NewMsp = z.object({
  name: z.string().trim().min(1).max(100),
  ownerUserId: z.string().trim().min(1).max(100),
});
export type NewMsp = z.infer<typeof NewMsp>;

type MspConfiguration = Omit<MspConfigItem, "pKey" | "sKey" | "entity">;

/** The configuration every new MSP gets (spec 2.14): Stripe billing, active, retail rates (1 = 100%). */
export function defaultMspConfiguration(input: { mspId: string; createdAt: string }): MspConfiguration {
  return {
    configurationType: "msp",
    mspId: input.mspId,
    billingType: "stripe",
    billingStatus: "active",
    promotionalCodes: null,
    rates: { apiSeconds: 1, storageGB: 1, aiTokens: 1, plan: 1 },
    configCreated: input.createdAt,
    configUpdated: input.createdAt,
  };
}

export interface MspMemberRef {
  userId: string;
  roles: MspRole[];
}

export function toApiMsp(item: MspItem) {
  return {
    mspId: item.mspId,
    mspName: item.mspName,
    mspCreated: item.mspCreated,
    mspUpdated: item.mspUpdated,
  };
}
export type ApiMsp = ReturnType<typeof toApiMsp>;

export function toApiMspConfiguration(item: MspConfiguration) {
  return {
    configurationType: item.configurationType,
    mspId: item.mspId,
    billingType: item.billingType,
    billingStatus: item.billingStatus,
    promotionalCodes: item.promotionalCodes,
    rates: item.rates,
    configCreated: item.configCreated,
    configUpdated: item.configUpdated,
  };
}
export type ApiMspConfiguration = ReturnType<typeof toApiMspConfiguration>;

export const mspMemberRef = (item: MspMemberItem): MspMemberRef => ({
  userId: item.userId,
  roles: [...item.roles],
});

/** The steps of creating an MSP, named so that a cancellation is read by name. */
const ADD_MSP_TO_OWNER = "addMspToOwner";

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
  const msp: MspItem = {
    ...mspKeys.item(mspId),
    entity: "msp",
    mspId,
    mspName: data.name,
    createdBy: data.ownerUserId,
    mspCreated: now,
    mspUpdated: now,
  };
  const configuration: MspConfigItem = {
    ...mspKeys.config(mspId),
    entity: "mspConfig",
    ...defaultMspConfiguration({ mspId, createdAt: now }),
  };
  const owner: MspMemberItem = {
    ...mspKeys.member(mspId, data.ownerUserId),
    entity: "mspMember",
    mspId,
    userId: data.ownerUserId,
    roles,
    memberCreated: now,
    memberUpdated: now,
  };
  const isNew = "attribute_not_exists(pKey)";
  const steps: TransactionStep[] = [
    { name: "putMsp", action: { Put: { TableName: tableName(), Item: msp, ConditionExpression: isNew } } },
    {
      name: "putMspConfig",
      action: { Put: { TableName: tableName(), Item: configuration, ConditionExpression: isNew } },
    },
    {
      name: "putOwnerMember",
      action: { Put: { TableName: tableName(), Item: owner, ConditionExpression: isNew } },
    },
    {
      name: ADD_MSP_TO_OWNER,
      action: {
        Update: {
          TableName: tableName(),
          Key: userKeys.item(data.ownerUserId),
          UpdateExpression: "ADD userMsps :msp SET userUpdated = :now",
          ConditionExpression: "attribute_exists(pKey)",
          ExpressionAttributeValues: { ":msp": new Set([mspId]), ":now": now },
        },
      },
    },
  ];
  try {
    await homeDb().send(new TransactWriteCommand({ TransactItems: transactItemsOf(steps) }));
  } catch (error) {
    if (cancelledSteps(error, steps)?.failed.includes(ADD_MSP_TO_OWNER)) throw notFound(MSP_OWNER_NOT_FOUND);
    throw error;
  }
  return {
    msp: toApiMsp(msp),
    configuration: toApiMspConfiguration(configuration),
    members: [mspMemberRef(owner)],
  };
}

/** The MSP and its configuration (one BatchGetItem), or undefined when there is no such MSP. */
export async function getMsp(
  mspId: string,
): Promise<{ msp: ApiMsp; configuration: ApiMspConfiguration | undefined } | undefined> {
  const found = await findMspWithConfig(mspId);
  if (!found) return undefined;
  return {
    msp: toApiMsp(found.msp),
    configuration: found.config && toApiMspConfiguration(found.config),
  };
}

export async function requireMsp(mspId: string) {
  const found = await getMsp(mspId);
  if (!found) throw notFound(MSP_NOT_FOUND);
  return found;
}

/** Members of an MSP (access pattern "MSP members", bounded). */
export async function listMspMembers(mspId: string): Promise<MspMemberRef[]> {
  return (await listMembersOfMsp(mspId)).map(mspMemberRef);
}
