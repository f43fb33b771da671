/**
 * Managed clients (spec 2.14, 3, 4.14): the clients an MSP creates and oversees, their members
 * through the MSP path, and their configuration (billing, rates, budget, regions, sharing,
 * limits). Access (the MSP role, and the client's link to this MSP) is checked before these run
 * (lib/api/dispatch.ts); they take the MspAccess it established. docs/msp-api.md.
 */
import { randomUUID } from "node:crypto";
import { UpdateCommand } from "#lib/aws/document-client.ts";
import { now } from "#lib/clock.ts";
import { getConfig } from "#lib/config.ts";
import { type ClientItem, clientItemOf, clientKeys, findClient } from "#lib/db/entities/client.ts";
import {
  type ClientConfigItem,
  type ClientSharing,
  clientConfigItemOf,
  clientConfigKeys,
  findClientConfig,
} from "#lib/db/entities/client-config.ts";
import { findMember, listMembersOfClient, type MemberItem, memberKeys } from "#lib/db/entities/member.ts";
import {
  findMspClientLink,
  findMspMember,
  findMspWithConfig,
  listClientLinksOfMsp,
  MAX_MSP_LIST_ITEMS,
  type MspClientItem,
  mspKeys,
} from "#lib/db/entities/msp.ts";
import { findUser, type UserItem } from "#lib/db/entities/user.ts";
import { keys } from "#lib/db/keys.ts";
import { type PageRequest, paginate } from "#lib/db/pagination.ts";
import {
  batchGet,
  commitSteps,
  homeDb,
  isConditionalCheckFailure,
  nowIso,
  type TransactionStep,
  tableName,
} from "#lib/db/store.ts";
import { badRequest, conflict, forbidden, notFound, validationFailed } from "#lib/shared/errors.ts";
import { type ClientRole, normaliseRoles } from "#lib/shared/roles.ts";
import type { MspAccess } from "./access.ts";
import { billingSettings } from "./billing-settings.ts";
import { defaultClientConfiguration } from "./client-config.ts";
import { addClientToUserStep, CLIENT_NOT_FOUND, MAX_CLIENTS_PER_USER, memberRef } from "./clients.ts";
import { effectiveBillingStatus } from "./dunning.ts";
import { MEMBER_NOT_FOUND, membershipRemovalSteps } from "./members.ts";
import { syncManagedRuntime } from "./msp-enforcement.ts";
import { ROLES_REQUIRED } from "./msp-member-rules.ts";
import { applyRates, applyThresholds, type Rates, type Thresholds } from "./msp-pricing.ts";
import { toApiMspMember } from "./msp-team.ts";
import { MSP_NOT_FOUND } from "./msps.ts";
import { deleteCustomer, hasDefaultPaymentMethod, provisionCustomer } from "./payments.ts";
import {
  PLATFORM_MAX_REQUESTS_PER_DAY,
  PLATFORM_MAX_REQUESTS_PER_MINUTE,
  planStatusOf,
  planTierOf,
} from "./plans.ts";

export const NO_INDEPENDENT_OWNER = "Cannot detach client, no independent owner";
export const BILLED_TO_MSP = "Cannot detach client, billing is charged to the MSP";
export const NO_PAYMENT_METHOD = "Cannot bill to MSP: no payment method on file";
export const OWNER_BY_SYSTEM_ADMIN =
  "Forbidden: only a system administrator assigns or removes the owner role through the MSP path";
export const OWNER_NOT_REMOVABLE = "Forbidden: an owner cannot be removed through the MSP path";
const CONCURRENT_CHANGE = "The client changed concurrently; retry";

/** What a client the MSP creates shares with it: everything (the MSP builds it). */
export const MSP_CREATED_SHARING: ClientSharing = {
  proxyCredentials: true,
  targetCredentials: true,
  targets: true,
  proxies: true,
};

const clientIdOf = (access: MspAccess): string => {
  if (!access.clientId) throw notFound(CLIENT_NOT_FOUND);
  return access.clientId;
};

export const toApiManagedClientSummary = (client: ClientItem) => ({
  clientId: client.clientId,
  clientName: client.clientName,
  clientCreated: client.clientCreated,
  clientUpdated: client.clientUpdated,
});

// ---------------------------------------------------------------- clients

const PUT_CLIENT = "putClient";
const PUT_CLIENT_CONFIG = "putClientConfig";
const LINK_CLIENT = "linkClientToMsp";
const COUNT_CLIENT = "countClientOnMsp";

/** POST /api/msps/{mspId}/clients: a client linked to the MSP, billed to it, with no members yet. */
export async function createManagedClient(access: MspAccess, clientName: string) {
  const clientId = randomUUID();
  const now = nowIso();
  const payment = await provisionCustomer({ clientId, clientName });
  const client: ClientItem = {
    ...clientKeys.item(clientId),
    entity: "client",
    clientId,
    clientName,
    clientStatus: "active",
    memberCount: 0,
    adminCount: 0,
    ownerCount: 0,
    createdBy: access.userId,
    clientCreated: now,
    clientUpdated: now,
  };
  const link: MspClientItem = {
    ...mspKeys.client(access.mspId, clientId),
    entity: "mspClient",
    mspId: access.mspId,
    clientId,
    linkedAt: now,
  };
  const config = {
    ...clientConfigKeys.item(clientId),
    entity: "clientConfig",
    ...defaultClientConfiguration({
      clientId,
      regions: getConfig().regions,
      createdAt: now,
      payment,
      billingTo: "msp",
      mspId: access.mspId,
    }),
    sharing: MSP_CREATED_SHARING,
  };
  const isNew = "attribute_not_exists(pKey)";
  const steps: TransactionStep[] = [
    {
      name: PUT_CLIENT,
      action: { Put: { TableName: tableName(), Item: client, ConditionExpression: isNew } },
    },
    {
      name: PUT_CLIENT_CONFIG,
      action: { Put: { TableName: tableName(), Item: config, ConditionExpression: isNew } },
    },
    {
      name: LINK_CLIENT,
      action: { Put: { TableName: tableName(), Item: link, ConditionExpression: isNew } },
    },
    {
      name: COUNT_CLIENT,
      action: {
        Update: {
          TableName: tableName(),
          Key: mspKeys.item(access.mspId),
          UpdateExpression: "ADD clientCount :one SET mspUpdated = :now",
          ConditionExpression:
            "attribute_exists(pKey) AND (attribute_not_exists(clientCount) OR clientCount < :max)",
          ExpressionAttributeValues: { ":one": 1, ":now": now, ":max": MAX_MSP_LIST_ITEMS },
        },
      },
    },
  ];
  try {
    await commitSteps(steps, {
      cancelled: ({ failed }) =>
        failed.includes(COUNT_CLIENT)
          ? badRequest(`An MSP manages at most ${MAX_MSP_LIST_ITEMS} clients`)
          : undefined,
    });
  } catch (error) {
    if (payment.paymentCustomerId) await deleteCustomer(payment.paymentCustomerId);
    throw error;
  }
  // With the MSP's suspension when it is suspended already (read after the commit).
  await syncManagedRuntime(clientId, { billingStatus: "active", planTier: "basic", planStatus: "active" });
  return toApiManagedClientSummary(client);
}

export async function listManagedClients(access: MspAccess, page: PageRequest) {
  const { items: links, pagination } = paginate(await listClientLinksOfMsp(access.mspId), page);
  const found = await batchGet(links.map((link) => keys.client(link.clientId)));
  const byId = new Map(found.map((item) => [item.clientId, item]));
  const clients = links.flatMap((link) => {
    const item = byId.get(link.clientId);
    return item ? [toApiManagedClientSummary(clientItemOf(item))] : [];
  });
  return { clients, pagination };
}

/** GET /api/msps/{mspId}/clients/{clientId}: the client, its members, and how the MSP manages it. */
export async function getManagedClient(access: MspAccess) {
  const clientId = clientIdOf(access);
  const [client, members, config, link] = await Promise.all([
    findClient(clientId),
    listMembersOfClient(clientId),
    findClientConfig(clientId),
    findMspClientLink(access.mspId, clientId),
  ]);
  if (!client || !config || !link) throw notFound(CLIENT_NOT_FOUND);
  return {
    ...toApiManagedClientSummary(client),
    clientStatus: client.clientStatus,
    clientMembers: members.map(memberRef),
    mspId: access.mspId,
    mspLinkedAt: link.linkedAt,
    billingTo: config.billingTo,
    billingStatus: config.billingStatus,
    planTier: planTierOf(config.planTier),
    planStatus: planStatusOf(config.planStatus),
  };
}

/** PUT /api/msps/{mspId}/clients/{clientId}: only the name changes. */
export async function updateManagedClient(access: MspAccess, input: { clientName?: string }) {
  const clientId = clientIdOf(access);
  if (input.clientName !== undefined) {
    try {
      await homeDb().send(
        new UpdateCommand({
          TableName: tableName(),
          Key: clientKeys.item(clientId),
          UpdateExpression: "SET clientName = :name, clientUpdated = :now",
          ConditionExpression: "attribute_exists(pKey)",
          ExpressionAttributeValues: { ":name": input.clientName, ":now": nowIso() },
        }),
      );
    } catch (error) {
      if (isConditionalCheckFailure(error)) throw notFound(CLIENT_NOT_FOUND);
      throw error;
    }
  }
  const client = await findClient(clientId);
  if (!client) throw notFound(CLIENT_NOT_FOUND);
  return { clientId, clientName: client.clientName, clientUpdated: client.clientUpdated };
}

/** The detach decision (spec 3, 4.14) as a pure rule: which 409, if any. */
export function detachRefusal(input: { independentOwners: number; billingTo: string }): string | undefined {
  if (input.independentOwners < 1) return NO_INDEPENDENT_OWNER;
  if (input.billingTo === "msp") return BILLED_TO_MSP;
  return undefined;
}

const UNLINK_CLIENT = "unlinkClient";
const CLEAR_MSP_OF_CONFIG = "clearMspOfConfig";
const OWNER_STILL_THERE = "ownerStillThere";
const UNCOUNT_CLIENT = "uncountClientOnMsp";

/**
 * DELETE /api/msps/{mspId}/clients/{clientId}: detach. 409 unless the client has an independent
 * owner (an owner member who is not staff of this MSP) and is not billed to the MSP. The client
 * keeps everything; only the link goes (and MSP staff lose their reach through the Core API).
 */
export async function detachManagedClient(access: MspAccess): Promise<void> {
  const clientId = clientIdOf(access);
  const [members, config] = await Promise.all([listMembersOfClient(clientId), findClientConfig(clientId)]);
  if (!config) throw notFound(CLIENT_NOT_FOUND);
  const owners = members.filter((member) => member.roles.includes("owner"));
  const staff = await Promise.all(owners.map((owner) => findMspMember(access.mspId, owner.userId)));
  const independent = owners.filter((_, index) => !staff[index]);
  const refusal = detachRefusal({ independentOwners: independent.length, billingTo: config.billingTo });
  if (refusal) throw conflict(refusal);
  const now = nowIso();
  const steps: TransactionStep[] = [
    {
      name: UNLINK_CLIENT,
      action: {
        Delete: {
          TableName: tableName(),
          Key: mspKeys.client(access.mspId, clientId),
          ConditionExpression: "attribute_exists(pKey)",
        },
      },
    },
    {
      name: CLEAR_MSP_OF_CONFIG,
      action: {
        Update: {
          TableName: tableName(),
          Key: clientConfigKeys.item(clientId),
          UpdateExpression: "SET mspId = :null, configUpdated = :now",
          ConditionExpression: "mspId = :msp AND billingTo <> :msp_billing",
          ExpressionAttributeValues: {
            ":null": null,
            ":now": now,
            ":msp": access.mspId,
            ":msp_billing": "msp",
          },
        },
      },
    },
    ...independent.map(
      (owner, index): TransactionStep => ({
        name: `${OWNER_STILL_THERE}${index}`,
        action: {
          ConditionCheck: {
            TableName: tableName(),
            Key: memberKeys.item(clientId, owner.userId),
            ConditionExpression: "contains(#roles, :owner)",
            ExpressionAttributeNames: { "#roles": "roles" },
            ExpressionAttributeValues: { ":owner": "owner" },
          },
        },
      }),
    ),
    {
      name: UNCOUNT_CLIENT,
      action: {
        Update: {
          TableName: tableName(),
          Key: mspKeys.item(access.mspId),
          UpdateExpression: "ADD clientCount :minusOne SET mspUpdated = :now",
          ConditionExpression: "attribute_exists(pKey)",
          ExpressionAttributeValues: { ":minusOne": -1, ":now": now },
        },
      },
    },
  ];
  await commitSteps(steps, {
    cancelled: ({ failed }) =>
      failed.includes(UNLINK_CLIENT) ? notFound(CLIENT_NOT_FOUND) : conflict(CONCURRENT_CHANGE),
  });
  // The MSP's limits no longer apply on the data plane (they stay in the configuration).
  await syncManagedRuntime(clientId);
}

// ---------------------------------------------------------------- members of a managed client

/** A member as the MSP path shows it: roles and contact fields, no phone (spec 2.2), as the MSP's own members. */
export const toApiMspPathMember = toApiMspMember;

async function usersById(userIds: readonly string[]): Promise<Map<string, UserItem>> {
  const users = await Promise.all(userIds.map((userId) => findUser(userId)));
  return new Map(users.flatMap((user) => (user ? [[user.userId, user] as const] : [])));
}

export async function listManagedClientMembers(access: MspAccess, page: PageRequest) {
  const { items, pagination } = paginate(await listMembersOfClient(clientIdOf(access)), page);
  const users = await usersById(items.map((member) => member.userId));
  return { members: items.map((member) => toApiMspPathMember(member, users.get(member.userId))), pagination };
}

export async function getManagedClientMember(access: MspAccess, userId: string) {
  const member = await findMember(clientIdOf(access), userId);
  if (!member) throw notFound(MEMBER_NOT_FOUND);
  return toApiMspPathMember(member, await findUser(userId));
}

/**
 * What a role change through the MSP path may do (pure): roles are required; only a system
 * administrator grants or takes away `owner`.
 */
export function planMspPathRoles(input: {
  currentRoles: readonly string[] | undefined;
  requestedRoles: readonly string[] | undefined;
  systemAdmin: boolean;
}): ClientRole[] {
  const roles = normaliseRoles(input.requestedRoles ?? []);
  if (roles.length === 0) throw badRequest(ROLES_REQUIRED);
  const hadOwner = input.currentRoles?.includes("owner") ?? false;
  if (hadOwner !== roles.includes("owner") && !input.systemAdmin) throw forbidden(OWNER_BY_SYSTEM_ADMIN);
  return roles;
}

const WRITE_MEMBER = "writeMember";
const COUNT_ROLES = "countRoles";
const ADD_CLIENT_TO_USER = "addClientToUser";

const delta = (before: readonly string[], after: readonly string[], role: ClientRole) =>
  Number(after.includes(role)) - Number(before.includes(role));

/**
 * PUT /api/msps/{mspId}/clients/{clientId}/members/{userId}: replace a member's roles. A user who
 * is not a member yet is added when they are staff of this MSP (or the caller is a system
 * administrator, who assigns the client's independent owner); anyone else is invited instead.
 */
export async function setManagedClientMemberRoles(access: MspAccess, userId: string, requested?: string[]) {
  const clientId = clientIdOf(access);
  const [client, member, user] = await Promise.all([
    findClient(clientId),
    findMember(clientId, userId),
    findUser(userId),
  ]);
  if (!client) throw notFound(CLIENT_NOT_FOUND);
  const roles = planMspPathRoles({
    currentRoles: member?.roles,
    requestedRoles: requested,
    systemAdmin: access.systemAdmin,
  });
  if (!member) {
    if (!user) throw notFound(MEMBER_NOT_FOUND);
    if (!access.systemAdmin && !(await findMspMember(access.mspId, userId))) throw notFound(MEMBER_NOT_FOUND);
  }
  const before: readonly string[] = member?.roles ?? [];
  const now = nowIso();
  const item: MemberItem = {
    ...memberKeys.item(clientId, userId),
    entity: "member",
    clientId,
    userId,
    roles,
    memberCreated: member?.memberCreated ?? now,
    memberUpdated: now,
    ...(member?.joinedByInvite ? { joinedByInvite: member.joinedByInvite } : {}),
  };
  const steps: TransactionStep[] = [
    {
      name: WRITE_MEMBER,
      action: {
        Put: {
          TableName: tableName(),
          Item: item,
          ...(member
            ? {
                ConditionExpression: "#roles = :old",
                ExpressionAttributeNames: { "#roles": "roles" },
                ExpressionAttributeValues: { ":old": member.roles },
              }
            : { ConditionExpression: "attribute_not_exists(pKey)" }),
        },
      },
    },
    {
      name: COUNT_ROLES,
      action: {
        Update: {
          TableName: tableName(),
          Key: clientKeys.item(clientId),
          UpdateExpression: "ADD memberCount :md, adminCount :ad, ownerCount :od SET clientUpdated = :now",
          ConditionExpression: "adminCount = :ac AND ownerCount = :oc AND clientStatus = :active",
          ExpressionAttributeValues: {
            ":md": member ? 0 : 1,
            ":ad": delta(before, roles, "admin"),
            ":od": delta(before, roles, "owner"),
            ":ac": client.adminCount,
            ":oc": client.ownerCount,
            ":active": "active",
            ":now": now,
          },
        },
      },
    },
    ...(member ? [] : [addClientToUserStep(ADD_CLIENT_TO_USER, userId, clientId, now)]),
  ];
  await commitSteps(steps, {
    cancelled: ({ failed }) =>
      failed.includes(ADD_CLIENT_TO_USER)
        ? badRequest(`A user can belong to at most ${MAX_CLIENTS_PER_USER} clients`)
        : conflict(CONCURRENT_CHANGE),
  });
  return toApiMspPathMember(item, user);
}

/** DELETE /api/msps/{mspId}/clients/{clientId}/members/{userId}: an owner cannot be removed here. */
export async function removeManagedClientMember(access: MspAccess, userId: string): Promise<void> {
  const clientId = clientIdOf(access);
  const [client, member] = await Promise.all([findClient(clientId), findMember(clientId, userId)]);
  if (!client) throw notFound(CLIENT_NOT_FOUND);
  if (!member) throw notFound(MEMBER_NOT_FOUND);
  if (member.roles.includes("owner")) throw forbidden(OWNER_NOT_REMOVABLE);
  const plan = { adminDelta: member.roles.includes("admin") ? -1 : 0, ownerDelta: 0 };
  const counts = { adminCount: client.adminCount, ownerCount: client.ownerCount };
  await commitSteps(membershipRemovalSteps(clientId, userId, member, counts, plan), {
    cancelled: () => conflict(CONCURRENT_CHANGE),
  });
}

// ---------------------------------------------------------------- configurations

/** The managed-client configuration as the MSP API shows it (spec 2.14). */
export function toApiClientConfiguration(config: ClientConfigItem) {
  return {
    configurationType: config.configurationType,
    clientId: config.clientId,
    mspId: config.mspId,
    billingTo: config.billingTo,
    billingType: config.billingType,
    // Decided at read time: suspended once a failed payment outlasts the grace period (docs/billing.md).
    billingStatus: effectiveBillingStatus(
      { billingStatus: config.billingStatus, paymentFailedAt: config.planPaymentFailedAt },
      now(),
      billingSettings().graceDays,
    ),
    topUpMethod: config.topUpMethod,
    regionAccess: [...config.regionAccess],
    sharing: { ...config.sharing },
    limits: { ...config.limits },
    budget: { ...config.budget },
    rates: { ...config.rates },
    planTier: planTierOf(config.planTier),
    planStatus: planStatusOf(config.planStatus),
    planPendingTier: config.planPendingTier,
    planPendingInvoiceId: config.planPendingInvoiceId,
    planPendingEffectiveAt: config.planPendingEffectiveAt,
    planExpiresAt: config.planExpiresAt,
    planRenewedAt: config.planRenewedAt,
    planBillingAnchor: config.planBillingAnchor,
    planStripeInvoiceId: config.planStripeInvoiceId,
    featureOverrides: [...config.featureOverrides],
    promoOverrides: [...config.promoOverrides],
    configCreated: config.configCreated,
    configUpdated: config.configUpdated,
  };
}

/** The part of it a PUT answers: what the PUT can change, and when it changed. */
export function toApiClientConfigurationUpdate(config: ClientConfigItem) {
  const all = toApiClientConfiguration(config);
  return {
    clientId: all.clientId,
    billingTo: all.billingTo,
    billingType: all.billingType,
    topUpMethod: all.topUpMethod,
    regionAccess: all.regionAccess,
    sharing: all.sharing,
    limits: all.limits,
    budget: all.budget,
    rates: all.rates,
    configUpdated: all.configUpdated,
  };
}

async function requireManagedConfig(access: MspAccess): Promise<ClientConfigItem> {
  const config = await findClientConfig(clientIdOf(access));
  if (!config || config.mspId !== access.mspId) throw notFound(CLIENT_NOT_FOUND);
  return config;
}

export async function getManagedClientConfiguration(access: MspAccess) {
  return toApiClientConfiguration(await requireManagedConfig(access));
}

export interface ClientConfigurationUpdate {
  billingTo?: "client" | "msp";
  billingType?: "stripe";
  topUpMethod?: "automatic" | "manual";
  regionAccess?: string[];
  rates?: Partial<Rates>;
  budget?: Partial<Thresholds>;
  sharing?: Partial<ClientSharing>;
  limits?: { requestsPerMinute?: number | null; requestsPerDay?: number | null };
}

/** The platform maximum of each managed-client limit (spec 8; lib/domain/plans.ts). */
export const LIMIT_MAXIMUMS = {
  requestsPerMinute: PLATFORM_MAX_REQUESTS_PER_MINUTE,
  requestsPerDay: PLATFORM_MAX_REQUESTS_PER_DAY,
} as const;

/** The limits after an update (pure): null clears one, omitted keeps it; above the maximum: 400. */
export function plannedLimits(
  current: ClientConfigItem["limits"],
  update: ClientConfigurationUpdate["limits"],
): ClientConfigItem["limits"] {
  const over = (Object.keys(LIMIT_MAXIMUMS) as (keyof typeof LIMIT_MAXIMUMS)[]).filter(
    (field) => (update?.[field] ?? 0) > LIMIT_MAXIMUMS[field],
  );
  if (over.length > 0)
    throw validationFailed(
      over.map((field) => ({
        field: `limits.${field}`,
        problem: `must be at most ${LIMIT_MAXIMUMS[field]} (the platform maximum)`,
      })),
    );
  const next = (field: keyof typeof LIMIT_MAXIMUMS) =>
    update?.[field] === undefined ? current[field] : update[field];
  return { requestsPerMinute: next("requestsPerMinute"), requestsPerDay: next("requestsPerDay") };
}

/**
 * The configuration after an update (pure): the pricing rules (lib/domain/msp-pricing.ts), the
 * regions the deployment has, limits at most the platform maximum. `budget.current` is kept.
 */
export function plannedConfiguration(
  current: ClientConfigItem,
  update: ClientConfigurationUpdate,
  context: { mspRates: Rates; regions: readonly string[] },
): ClientConfigItem {
  const unknownRegions = (update.regionAccess ?? []).filter((region) => !context.regions.includes(region));
  if (unknownRegions.length > 0)
    throw badRequest("Input failed data validation", {
      fields: ["regionAccess"],
      errors: [
        `regionAccess: unknown region ${unknownRegions.join(", ")}; regions: ${context.regions.join(", ")}`,
      ],
    });
  const billingTo = update.billingTo ?? current.billingTo;
  const billingType = update.billingType ?? current.billingType;
  const thresholds = applyThresholds(current.budget, update.budget, { billingTo, billingType });
  return {
    ...current,
    billingTo,
    billingType,
    topUpMethod: update.topUpMethod ?? current.topUpMethod,
    regionAccess: update.regionAccess ? [...new Set(update.regionAccess)] : current.regionAccess,
    rates: applyRates(current.rates, update.rates, context.mspRates),
    budget: { current: current.budget.current, ...thresholds },
    sharing: { ...current.sharing, ...update.sharing },
    limits: plannedLimits(current.limits, update.limits),
  };
}

/** PUT /api/msps/{mspId}/clients/{clientId}/configurations (spec 4.14 rules 1-4). */
export async function updateManagedClientConfiguration(access: MspAccess, update: ClientConfigurationUpdate) {
  const [current, found] = await Promise.all([requireManagedConfig(access), findMspWithConfig(access.mspId)]);
  if (!found?.config) throw notFound(MSP_NOT_FOUND);
  const next = plannedConfiguration(current, update, {
    mspRates: found.config.rates,
    regions: getConfig().regions,
  });
  // Rule 4: what the webhook recorded when an msp_owner added a payment method (setup-mode
  // Checkout); else the processor is asked (a method added there directly counts too).
  if (next.billingTo === "msp" && current.billingTo !== "msp" && !found.config.paymentMethodOnFile) {
    if (!(await hasDefaultPaymentMethod(found.config.paymentCustomerId))) throw badRequest(NO_PAYMENT_METHOD);
  }
  const stored: ClientConfigItem = { ...next, configUpdated: nowIso() };
  try {
    await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: clientConfigKeys.item(current.clientId),
        UpdateExpression:
          "SET billingTo = :billingTo, billingType = :billingType, topUpMethod = :topUp, regionAccess = :regions, rates = :rates, budget.minimumTopUpThreshold = :minimum, budget.maximumTopUpThreshold = :maximum, sharing = :sharing, limits = :limits, configUpdated = :now",
        // decided from the configuration read: a concurrent change (or a detach) is a 409
        ConditionExpression: "configUpdated = :read AND mspId = :msp",
        ExpressionAttributeValues: {
          ":billingTo": stored.billingTo,
          ":billingType": stored.billingType,
          ":topUp": stored.topUpMethod,
          ":regions": stored.regionAccess,
          ":rates": stored.rates,
          // the thresholds only: `budget.current` is the draw-downs' and top-ups' (never overwritten here)
          ":minimum": stored.budget.minimumTopUpThreshold,
          ":maximum": stored.budget.maximumTopUpThreshold,
          ":sharing": stored.sharing,
          ":limits": stored.limits,
          ":now": stored.configUpdated,
          ":read": current.configUpdated,
          ":msp": access.mspId,
        },
      }),
    );
  } catch (error) {
    if (isConditionalCheckFailure(error)) throw conflict(CONCURRENT_CHANGE);
    throw error;
  }
  // Limits and who pays reach the data plane on the client's next request.
  await syncManagedRuntime(current.clientId);
  return toApiClientConfigurationUpdate(clientConfigItemOf(stored));
}
