/**
 * Managed-service providers (spec 2.14 configuration, 4.14 API). An MSP's partition MSP#<mspId>
 * holds the MSP item, its configuration, its members (MEMBER#<userId>) and, later, the clients it
 * manages and its invites (keys.ts). A user's MSPs are the `userMsps` string set on the user.
 *
 * Today operators create MSPs with the admin CLI (`msps create`); the MSP API extends this module.
 */
import { randomUUID } from "node:crypto";
import { z } from "zod";
import { UpdateCommand } from "#lib/aws/document-client.ts";
import {
  findMspWithConfig,
  listMembersOfMsp,
  type MspConfigItem,
  type MspItem,
  type MspMemberItem,
  mspConfigItemOf,
  mspKeys,
} from "#lib/db/entities/msp.ts";
import { userKeys } from "#lib/db/entities/user.ts";
import {
  commitSteps,
  homeDb,
  isConditionalCheckFailure,
  nowIso,
  type TransactionStep,
  tableName,
} from "#lib/db/store.ts";
import { notFound } from "#lib/shared/errors.ts";
import type { MspRole } from "#lib/shared/roles.ts";
import type { MspAccess } from "./access.ts";
import { syncClientsPaidByMsp } from "./msp-enforcement.ts";
import { deleteCustomer, provisionMspCustomer } from "./payments.ts";

export const MSP_NOT_FOUND = "MSP not found";
export const MSP_OWNER_NOT_FOUND = "Owner user not found";

export const NewMsp = z.object({
  name: z.string().trim().min(1).max(100),
  ownerUserId: z.string().trim().min(1).max(100),
});
export type NewMsp = z.infer<typeof NewMsp>;

type MspConfiguration = Omit<MspConfigItem, "pKey" | "sKey" | "entity">;

/** The configuration every new MSP gets (spec 2.14): Stripe billing, active, retail rates (1 = 100%). */
export function defaultMspConfiguration(input: {
  mspId: string;
  createdAt: string;
  paymentCustomerId?: string | null;
}): MspConfiguration {
  return {
    configurationType: "msp",
    mspId: input.mspId,
    billingType: "stripe",
    billingStatus: "active",
    promotionalCodes: null,
    rates: { apiSeconds: 1, storageGB: 1, aiTokens: 1, plan: 1 },
    paymentCustomerId: input.paymentCustomerId ?? null,
    paymentMethodOnFile: false,
    paymentMethodUpdated: null,
    paymentMethodEventAt: null,
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
    // Read only: set by the webhook when an msp_owner adds a payment method (setup-mode Checkout).
    paymentMethodOnFile: item.paymentMethodOnFile,
    paymentMethodUpdated: item.paymentMethodUpdated,
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
    memberVersion: 0,
  };
  const paymentCustomerId = await provisionMspCustomer({ mspId, mspName: data.name });
  const configuration: MspConfigItem = {
    ...mspKeys.config(mspId),
    entity: "mspConfig",
    ...defaultMspConfiguration({ mspId, createdAt: now, paymentCustomerId }),
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
    await commitSteps(steps, {
      cancelled: ({ failed }) =>
        failed.includes(ADD_MSP_TO_OWNER) ? notFound(MSP_OWNER_NOT_FOUND) : undefined,
    });
  } catch (error) {
    if (paymentCustomerId) await deleteCustomer(paymentCustomerId);
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

/** What an msp_admin may change on the MSP's own configuration; rates and billing are an operator's. */
export interface MspConfigurationUpdate {
  promotionalCodes?: { name: string; expiresAt: string }[] | null;
}

/**
 * PUT /api/msps/{mspId}/configurations: the promotional codes (a code already there keeps its
 * `createdAt`). The MSP's rates, billing type and billing status are set by operators with the
 * admin CLI (`msps set-rates`, `msps set-billing`), never through the API.
 */
export async function updateMspConfiguration(access: MspAccess, update: MspConfigurationUpdate) {
  const found = await findMspWithConfig(access.mspId);
  if (!found?.config) throw notFound(MSP_NOT_FOUND);
  const now = nowIso();
  const createdAt = new Map((found.config.promotionalCodes ?? []).map((code) => [code.name, code.createdAt]));
  const promotionalCodes =
    update.promotionalCodes === undefined
      ? found.config.promotionalCodes
      : update.promotionalCodes === null
        ? null
        : update.promotionalCodes.map((code) => ({
            name: code.name,
            createdAt: createdAt.get(code.name) ?? now,
            expiresAt: code.expiresAt,
          }));
  await homeDb().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: mspKeys.config(access.mspId),
      UpdateExpression: "SET promotionalCodes = :codes, configUpdated = :now",
      ConditionExpression: "attribute_exists(pKey)",
      ExpressionAttributeValues: { ":codes": promotionalCodes, ":now": now },
    }),
  );
  return toApiMspConfiguration({ ...found.config, promotionalCodes, configUpdated: now });
}

export async function getMspConfiguration(access: MspAccess) {
  const found = await findMspWithConfig(access.mspId);
  if (!found?.config) throw notFound(MSP_NOT_FOUND);
  return toApiMspConfiguration(found.config);
}

/** The MSP's own rates: operators only (admin CLI); each a fraction of retail in (0, 1]. */
export const MspRatesUpdate = z
  .object({
    apiSeconds: z.number().gt(0).max(1),
    storageGB: z.number().gt(0).max(1),
    aiTokens: z.number().gt(0).max(1),
    plan: z.number().gt(0).max(1),
  })
  .partial()
  .refine((rates) => Object.values(rates).some((value) => value !== undefined), {
    message: "at least one rate is required",
  });

async function updateMspConfigFields(mspId: string, sets: Record<string, unknown>) {
  const now = nowIso();
  const names = Object.fromEntries(Object.keys(sets).map((field, index) => [`#f${index}`, field]));
  const values = Object.fromEntries(Object.values(sets).map((value, index) => [`:v${index}`, value]));
  try {
    const result = await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: mspKeys.config(mspId),
        UpdateExpression: `SET ${Object.keys(names)
          .map((name, index) => `${name} = :v${index}`)
          .join(", ")}, configUpdated = :now`,
        ConditionExpression: "attribute_exists(pKey)",
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: { ...values, ":now": now },
        ReturnValues: "ALL_NEW",
      }),
    );
    return toApiMspConfiguration(mspConfigItemOf(result.Attributes ?? {}));
  } catch (error) {
    if (isConditionalCheckFailure(error)) throw notFound(MSP_NOT_FOUND);
    throw error;
  }
}

/** `msps set-rates`: the submitted metrics change, the others keep their value. */
export async function setMspRates(mspId: string, rates: z.input<typeof MspRatesUpdate>) {
  const parsed = MspRatesUpdate.parse(rates);
  const found = await findMspWithConfig(mspId);
  if (!found?.config) throw notFound(MSP_NOT_FOUND);
  const submitted = Object.fromEntries(Object.entries(parsed).filter(([, value]) => value !== undefined));
  return updateMspConfigFields(mspId, { rates: { ...found.config.rates, ...submitted } });
}

/**
 * `msps set-billing`: suspend or reactivate the MSP's billing. Every client it pays for follows on
 * its next proxied request (402 while suspended; lib/domain/msp-enforcement.ts): `clientsUpdated`
 * says how many.
 */
export async function setMspBillingStatus(mspId: string, billingStatus: "active" | "suspended") {
  const configuration = await updateMspConfigFields(mspId, { billingStatus });
  return { ...configuration, clientsUpdated: await syncClientsPaidByMsp(mspId, billingStatus) };
}
