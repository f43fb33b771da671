/**
 * Clients (organisations, spec 2.1 and 4.1). A client's home partition CLIENT#<id> holds the client
 * item (with member/admin/owner counts that guard the membership rules), its configuration, its
 * members, and its pending invites.
 */
import { randomUUID } from "node:crypto";
import { UpdateCommand } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import { type ClientItem, clientKeys, findClient } from "#lib/db/entities/client.ts";
import { syncClientRuntime } from "#lib/db/entities/client-runtime.ts";
import { findMember, listMembersOfClient, type MemberItem, memberKeys } from "#lib/db/entities/member.ts";
import { keys } from "#lib/db/keys.ts";
import { type PageRequest, paginate } from "#lib/db/pagination.ts";
import {
  commitSteps,
  homeDb,
  isConditionalCheckFailure,
  nowIso,
  type TransactionStep,
  tableName,
} from "#lib/db/store.ts";
import { badRequest, notFound } from "#lib/shared/errors.ts";
import type { ClientRole } from "#lib/shared/roles.ts";
import type { ClientAccess } from "./access.ts";
import { defaultClientConfiguration } from "./client-config.ts";
import { deleteCustomer, provisionCustomer } from "./payments.ts";
import { requireUser, userClientIds } from "./users.ts";

export const CLIENT_NOT_FOUND = "Client not found";
/** Bound on the organisations one user can belong to (keeps every per-user list bounded). */
export const MAX_CLIENTS_PER_USER = 100;

/**
 * The transaction step that adds a client to a user's `userClients`, refused (condition) when the
 * user is gone or already belongs to MAX_CLIENTS_PER_USER clients. Creating a client and accepting
 * an invite both take it.
 */
export const addClientToUserStep = (
  name: string,
  userId: string,
  clientId: string,
  now: string,
): TransactionStep => ({
  name,
  action: {
    Update: {
      TableName: tableName(),
      Key: keys.user(userId),
      UpdateExpression: "ADD userClients :client SET userUpdated = :now",
      ConditionExpression:
        "attribute_exists(pKey) AND (attribute_not_exists(userClients) OR size(userClients) < :max)",
      ExpressionAttributeValues: {
        ":client": new Set([clientId]),
        ":now": now,
        ":max": MAX_CLIENTS_PER_USER,
      },
    },
  },
});

export interface MemberRef {
  userId: string;
  roles: ClientRole[];
}

export function toApiClient(client: ClientItem, members: readonly MemberRef[]) {
  return {
    clientId: client.clientId,
    clientName: client.clientName,
    clientMembers: members.map((m) => ({ userId: m.userId, roles: [...m.roles] })),
    clientStatus: client.clientStatus,
    ...(client.clientDeletionScheduledAt
      ? { clientDeletionScheduledAt: client.clientDeletionScheduledAt }
      : {}),
    clientCreated: client.clientCreated,
    clientUpdated: client.clientUpdated,
  };
}
export type ApiClient = ReturnType<typeof toApiClient>;

export const memberRef = (item: MemberItem): MemberRef => ({ userId: item.userId, roles: [...item.roles] });

/** The client item (access pattern "client", lib/db/entities/client.ts). */
export const getClientItem = findClient;
/** The member item (access pattern "membership check of one user", lib/db/entities/member.ts). */
export const getMemberItem = findMember;
/** The client's member items (access pattern "members of a client"). */
export const listMemberItems = listMembersOfClient;

/** The client with its members, or undefined. Two reads in parallel. */
export async function loadClient(
  clientId: string,
): Promise<{ client: ClientItem; members: MemberRef[] } | undefined> {
  const [client, members] = await Promise.all([findClient(clientId), listMembersOfClient(clientId)]);
  if (!client) return undefined;
  return { client, members: members.map(memberRef) };
}

/** The steps of creating a client, named so that a cancellation is read by name. */
const PUT_CLIENT = "putClient";
const PUT_CLIENT_CONFIG = "putClientConfig";
const PUT_CREATOR_MEMBER = "putCreatorMember";
const ADD_CLIENT_TO_USER = "addClientToUser";

export async function createClient(userId: string, clientName: string): Promise<ApiClient> {
  const config = getConfig();
  const user = await requireUser(userId);
  if (userClientIds(user).length >= MAX_CLIENTS_PER_USER) {
    throw badRequest(`A user can belong to at most ${MAX_CLIENTS_PER_USER} clients`);
  }
  const clientId = randomUUID();
  const now = nowIso();
  const payment = await provisionCustomer({
    clientId,
    clientName,
    email: String(user.userEmail ?? "") || undefined,
  });
  const roles: MemberItem["roles"] = ["owner", "admin"];
  const client: ClientItem = {
    ...clientKeys.item(clientId),
    entity: "client",
    clientId,
    clientName,
    clientStatus: "active",
    memberCount: 1,
    adminCount: 1,
    ownerCount: 1,
    createdBy: userId,
    clientCreated: now,
    clientUpdated: now,
  };
  const member: MemberItem = {
    ...memberKeys.item(clientId, userId),
    entity: "member",
    clientId,
    userId,
    roles,
    memberCreated: now,
    memberUpdated: now,
  };
  const steps: TransactionStep[] = [
    {
      name: PUT_CLIENT,
      action: {
        Put: { TableName: tableName(), Item: client, ConditionExpression: "attribute_not_exists(pKey)" },
      },
    },
    {
      name: PUT_CLIENT_CONFIG,
      action: {
        Put: {
          TableName: tableName(),
          Item: {
            ...clientKeys.config(clientId),
            entity: "clientConfig",
            ...defaultClientConfiguration({ clientId, regions: config.regions, createdAt: now, payment }),
          },
        },
      },
    },
    { name: PUT_CREATOR_MEMBER, action: { Put: { TableName: tableName(), Item: member } } },
    addClientToUserStep(ADD_CLIENT_TO_USER, userId, clientId, now),
  ];
  try {
    await commitSteps(steps, {
      cancelled: ({ failed }) =>
        failed.includes(ADD_CLIENT_TO_USER)
          ? badRequest(`A user can belong to at most ${MAX_CLIENTS_PER_USER} clients`)
          : undefined,
    });
  } catch (error) {
    if (payment.paymentCustomerId) await deleteCustomer(payment.paymentCustomerId);
    throw error;
  }
  // The regional data planes read billing status and plan from their own tables.
  await syncClientRuntime(clientId, { billingStatus: "active", planTier: "basic", planStatus: "active" });
  return toApiClient(client, [{ userId, roles }]);
}

export async function listClientsForUser(userId: string, page: PageRequest) {
  const user = await requireUser(userId);
  const { items: clientIds, pagination } = paginate(userClientIds(user), page);
  const loaded = await Promise.all(clientIds.map((clientId) => loadClient(clientId)));
  const clients = loaded.flatMap((entry) =>
    // userClients and membership are written in one transaction; the check keeps a stale read honest.
    entry?.members.some((m) => m.userId === userId) ? [toApiClient(entry.client, entry.members)] : [],
  );
  return { clients, pagination };
}

/** The organisation the access was granted on, with its members. */
export async function getClient(access: ClientAccess): Promise<ApiClient> {
  const entry = await loadClient(access.clientId);
  // Purged between the access check and this read.
  if (!entry) throw notFound(CLIENT_NOT_FOUND);
  return toApiClient(entry.client, entry.members);
}

/**
 * One of the user's own memberships (GET /api/users/{userId}/memberships/{clientId}): one round of
 * two parallel reads, as the members list already answers whether the user belongs to it.
 */
export async function getClientForMember(clientId: string, userId: string): Promise<ApiClient> {
  const entry = await loadClient(clientId);
  if (!entry?.members.some((m) => m.userId === userId)) throw notFound(CLIENT_NOT_FOUND);
  return toApiClient(entry.client, entry.members);
}

/** Only the name changes (spec 4.1). */
export async function renameClient(access: ClientAccess, clientName: string): Promise<ApiClient> {
  try {
    await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: clientKeys.item(access.clientId),
        UpdateExpression: "SET clientName = :name, clientUpdated = :now",
        ConditionExpression: "attribute_exists(pKey)",
        ExpressionAttributeValues: { ":name": clientName, ":now": nowIso() },
      }),
    );
  } catch (error) {
    if (isConditionalCheckFailure(error)) throw notFound(CLIENT_NOT_FOUND);
    throw error;
  }
  return getClient(access);
}
