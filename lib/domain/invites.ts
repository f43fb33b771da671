/**
 * Client invites (spec 2.3, 3, 4.3). An invite lives in the client's partition with a GSI1 entry
 * under the invitee's e-mail; a lock item per (client, e-mail) makes a second pending invite for
 * the same address a conditional-write failure (409). Invites expire 7 days after creation (TTL,
 * Unix seconds); DynamoDB deletes expired items late, so every read filters them out.
 *
 * States: pending -> accepted (PUT acceptInvite true: membership, userClients and the invite's
 * removal in one transaction) | rejected (invitee DELETE, or PUT acceptInvite false) | cancelled
 * (client DELETE) | expired (TTL).
 *
 * Access is checked before these functions run (lib/api/dispatch.ts): the client's side takes the
 * caller's ClientAccess (admin role), the invitee's side the caller's own user id (self).
 */
import { randomUUID } from "node:crypto";
import { getConfig } from "../config.ts";
import { DeleteCommand, GetCommand, TransactWriteCommand } from "../db/document-client.ts";
import { CLIENT_SK, keys } from "../db/keys.ts";
import {
  homeDb,
  type Item,
  isExpired,
  nowIso,
  nowSeconds,
  queryAll,
  queryPartition,
  tableName,
  transactionCancellationCodes,
  transactionConditionFailedAt,
} from "../db/store.ts";
import { sendEmail } from "../email.ts";
import { type PageRequest, paginate } from "../http/pagination.ts";
import { describeError, log } from "../log.ts";
import type { ClientAccess } from "./access.ts";
import { CLIENT_NOT_FOUND, getClientItem, getMemberItem, MAX_CLIENTS_PER_USER } from "./clients.ts";
import { badRequest, conflict, forbidden, notFound, upstreamFailed } from "./errors.ts";
import { createNotification } from "./notifications.ts";
import { normaliseRoles } from "./roles.ts";
import { findUserIdByEmail, requireUser } from "./users.ts";

export const INVITE_LIFETIME_SECONDS = 7 * 86_400;
export const MAX_PENDING_INVITES_PER_CLIENT = 100;
export const INVITE_NOT_FOUND = "Invite not found";
export const INVITE_EXISTS = "Invite already exists for this email";

export function toApiInvite(item: Item) {
  return {
    inviteId: String(item.inviteId),
    clientName: String(item.clientName),
    pKey: "INVITATION",
    sKey: String(item.inviteId),
    roles: Array.isArray(item.roles) ? item.roles.map(String) : [],
    userEmail: String(item.userEmail),
    parentId: String(item.clientId),
    TTL: Number(item.TTL),
    inviteExpiresAt: new Date(Number(item.TTL) * 1000).toISOString(),
    invitedBy: item.invitedBy,
    inviteCreated: item.inviteCreated,
    inviteUpdated: item.inviteUpdated,
  };
}
export type ApiInvite = ReturnType<typeof toApiInvite>;

function assertCanGrant(actorRoles: readonly string[], roles: readonly string[]) {
  if (roles.includes("owner") && !actorRoles.includes("owner"))
    throw forbidden("Only an owner can invite an owner");
}

async function sendInviteEmail(invite: Item, inviter: Item | undefined) {
  const link = `${getConfig().appUrl}/invites/${invite.inviteId}`;
  const who = inviter
    ? `${inviter.userFirstName} ${inviter.userLastName}`.trim() || String(inviter.userEmail)
    : "A member";
  const expires = new Date(Number(invite.TTL) * 1000).toUTCString();
  await sendEmail({
    to: String(invite.userEmail),
    subject: `You are invited to join ${invite.clientName}`,
    text: [
      `${who} invited you to join ${invite.clientName} as ${(invite.roles as string[]).join(", ")}.`,
      "",
      `Accept the invitation: ${link}`,
      "",
      `The invitation expires on ${expires}.`,
    ].join("\n"),
  });
}

async function pendingInvitesOfClient(clientId: string): Promise<Item[]> {
  const items = await queryPartition(keys.clientPartition(clientId), { sKeyPrefix: CLIENT_SK.invitePrefix });
  return items.filter((i) => !isExpired(i));
}

async function getPendingInvite(clientId: string, inviteId: string): Promise<Item> {
  const result = await homeDb().send(
    new GetCommand({ TableName: tableName(), Key: keys.invite(clientId, inviteId), ConsistentRead: true }),
  );
  if (!result.Item || isExpired(result.Item)) throw notFound(INVITE_NOT_FOUND);
  return result.Item;
}

/** POST /api/clients/{clientId}/invites: the caller holds the admin role (checked before). */
export async function createInvite(access: ClientAccess, input: { email: string; role: string }) {
  const { clientId, userId: callerId } = access;
  const roles = normaliseRoles([input.role]);
  assertCanGrant(access.roles, roles);
  const email = input.email.toLowerCase();
  const [client, existingUserId, pending, inviter] = await Promise.all([
    getClientItem(clientId),
    findUserIdByEmail(email),
    pendingInvitesOfClient(clientId),
    requireUser(callerId),
  ]);
  if (!client) throw notFound(CLIENT_NOT_FOUND);
  if (client.clientStatus !== "active") throw conflict("Client is scheduled for deletion");
  if (existingUserId && (await getMemberItem(clientId, existingUserId))) {
    throw conflict("User is already a member of this client");
  }
  if (pending.length >= MAX_PENDING_INVITES_PER_CLIENT) {
    throw badRequest(`A client can have at most ${MAX_PENDING_INVITES_PER_CLIENT} pending invites`);
  }
  const inviteId = randomUUID();
  const now = nowIso();
  const ttl = nowSeconds() + INVITE_LIFETIME_SECONDS;
  const invite: Item = {
    ...keys.invite(clientId, inviteId),
    ...keys.inviteByEmailIndex(email, inviteId),
    entity: "invite",
    inviteId,
    clientId,
    clientName: client.clientName,
    roles,
    userEmail: email,
    invitedBy: callerId,
    inviteCreated: now,
    inviteUpdated: now,
    TTL: ttl,
  };
  try {
    await homeDb().send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Put: { TableName: tableName(), Item: invite, ConditionExpression: "attribute_not_exists(pKey)" },
          },
          {
            Put: {
              TableName: tableName(),
              Item: {
                ...keys.inviteEmailLock(clientId, email),
                entity: "inviteEmailLock",
                inviteId,
                TTL: ttl,
              },
              // an expired invite's lock no longer counts
              ConditionExpression: "attribute_not_exists(pKey) OR #ttl <= :now",
              ExpressionAttributeNames: { "#ttl": "TTL" },
              ExpressionAttributeValues: { ":now": nowSeconds() },
            },
          },
        ],
      }),
    );
  } catch (error) {
    if (transactionConditionFailedAt(error, 1)) throw conflict(INVITE_EXISTS);
    throw error;
  }
  try {
    await sendInviteEmail(invite, inviter);
  } catch (error) {
    // Nothing half-done: an invite nobody was told about is withdrawn.
    log.error("Invite e-mail failed; withdrawing the invite", {
      clientId,
      inviteId,
      ...describeError(error),
    });
    await removeInviteItems(clientId, inviteId);
    throw upstreamFailed("Could not send the invite email; the invite was not created");
  }
  if (existingUserId) {
    await createNotification(
      { kind: "user", userId: existingUserId },
      {
        type: "invitation",
        title: `Invitation to ${client.clientName}`,
        message: `You are invited to join ${client.clientName} as ${roles.join(", ")}.`,
      },
    ).catch((error: unknown) => log.warn("Invite notification failed", describeError(error)));
  }
  return toApiInvite(invite);
}

/** Delete an invite and, when it still points at this invite, its e-mail lock. */
async function removeInviteItems(clientId: string, inviteId: string, emailCondition?: string): Promise<Item> {
  const invite = await getPendingInvite(clientId, inviteId);
  try {
    await homeDb().send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Delete: {
              TableName: tableName(),
              Key: keys.invite(clientId, inviteId),
              ConditionExpression: emailCondition
                ? "attribute_exists(pKey) AND userEmail = :email"
                : "attribute_exists(pKey)",
              ...(emailCondition ? { ExpressionAttributeValues: { ":email": emailCondition } } : {}),
            },
          },
          {
            Delete: {
              TableName: tableName(),
              Key: keys.inviteEmailLock(clientId, String(invite.userEmail)),
              ConditionExpression: "inviteId = :id",
              ExpressionAttributeValues: { ":id": inviteId },
            },
          },
        ],
      }),
    );
  } catch (error) {
    if (transactionConditionFailedAt(error, 0)) throw notFound(INVITE_NOT_FOUND);
    if (!transactionConditionFailedAt(error, 1)) throw error;
    // The lock belongs to a newer invite: remove only this one.
    await homeDb().send(new DeleteCommand({ TableName: tableName(), Key: keys.invite(clientId, inviteId) }));
  }
  return invite;
}

export async function listClientInvites(access: ClientAccess, page: PageRequest) {
  const { items, pagination } = paginate(await pendingInvitesOfClient(access.clientId), page);
  return { invites: items.map(toApiInvite), pagination };
}

export async function getClientInvite(access: ClientAccess, inviteId: string) {
  return toApiInvite(await getPendingInvite(access.clientId, inviteId));
}

/** PUT /api/clients/{clientId}/invites/{inviteId}: replace roles and/or re-send (renewing the 7 days). */
export async function updateClientInvite(
  access: ClientAccess,
  inviteId: string,
  input: { roles?: string[]; resend?: boolean },
) {
  const { clientId, userId: callerId } = access;
  const invite = await getPendingInvite(clientId, inviteId);
  const roles = input.roles ? normaliseRoles(input.roles) : (invite.roles as string[]);
  assertCanGrant(access.roles, roles);
  const ttl = input.resend ? nowSeconds() + INVITE_LIFETIME_SECONDS : Number(invite.TTL);
  const now = nowIso();
  try {
    await homeDb().send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Update: {
              TableName: tableName(),
              Key: keys.invite(clientId, inviteId),
              UpdateExpression: "SET #roles = :roles, #ttl = :ttl, inviteUpdated = :now",
              ConditionExpression: "attribute_exists(pKey) AND #ttl > :nowSec",
              ExpressionAttributeNames: { "#roles": "roles", "#ttl": "TTL" },
              ExpressionAttributeValues: {
                ":roles": roles,
                ":ttl": ttl,
                ":now": now,
                ":nowSec": nowSeconds(),
              },
            },
          },
          {
            Update: {
              TableName: tableName(),
              Key: keys.inviteEmailLock(clientId, String(invite.userEmail)),
              UpdateExpression: "SET #ttl = :ttl",
              ConditionExpression: "inviteId = :id",
              ExpressionAttributeNames: { "#ttl": "TTL" },
              ExpressionAttributeValues: { ":ttl": ttl, ":id": inviteId },
            },
          },
        ],
      }),
    );
  } catch (error) {
    if (transactionCancellationCodes(error)?.includes("ConditionalCheckFailed"))
      throw notFound(INVITE_NOT_FOUND);
    throw error;
  }
  const updated = { ...invite, roles, TTL: ttl, inviteUpdated: now };
  if (input.resend) {
    try {
      await sendInviteEmail(updated, await requireUser(callerId));
    } catch (error) {
      log.error("Invite e-mail re-send failed", { clientId, inviteId, ...describeError(error) });
      throw upstreamFailed("The invite was updated but the email could not be sent; try again");
    }
  }
  return toApiInvite(updated);
}

export async function cancelClientInvite(access: ClientAccess, inviteId: string) {
  await removeInviteItems(access.clientId, inviteId);
}

// ---- the invitee's side: /api/users/{userId}/invites ----

async function inviteeEmail(userId: string): Promise<string> {
  return String((await requireUser(userId)).userEmail).toLowerCase();
}

/** An invite addressed to this user, or 404 (also for someone else's invite: no probing). */
async function findInviteForInvitee(userId: string, inviteId: string): Promise<Item> {
  const email = await inviteeEmail(userId);
  const index = keys.inviteByEmailIndex(email, inviteId);
  const hits = await queryAll({
    IndexName: "GSI1",
    KeyConditionExpression: "gsi1pk = :pk AND gsi1sk = :sk",
    ExpressionAttributeValues: { ":pk": index.gsi1pk, ":sk": index.gsi1sk },
  });
  const hit = hits[0];
  if (!hit) throw notFound(INVITE_NOT_FOUND);
  // The index is eventually consistent: confirm against the item itself.
  const invite = await getPendingInvite(String(hit.clientId), inviteId);
  if (String(invite.userEmail) !== email) throw notFound(INVITE_NOT_FOUND);
  return invite;
}

export async function listInviteeInvites(userId: string, page: PageRequest) {
  const email = await inviteeEmail(userId);
  const items = await queryAll({
    IndexName: "GSI1",
    KeyConditionExpression: "gsi1pk = :pk AND begins_with(gsi1sk, :prefix)",
    ExpressionAttributeValues: { ":pk": keys.inviteByEmailIndex(email, "").gsi1pk, ":prefix": "INVITE#" },
  });
  const { items: pageItems, pagination } = paginate(
    items.filter((i) => !isExpired(i) && i.entity === "invite"),
    page,
  );
  return { invites: pageItems.map(toApiInvite), pagination };
}

export async function getInviteeInvite(userId: string, inviteId: string) {
  return toApiInvite(await findInviteForInvitee(userId, inviteId));
}

export async function acceptInvite(userId: string, inviteId: string) {
  const invite = await findInviteForInvitee(userId, inviteId);
  const clientId = String(invite.clientId);
  const roles = invite.roles as string[];
  const now = nowIso();
  try {
    await homeDb().send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Delete: {
              TableName: tableName(),
              Key: keys.invite(clientId, inviteId),
              ConditionExpression: "attribute_exists(pKey) AND #ttl > :nowSec AND userEmail = :email",
              ExpressionAttributeNames: { "#ttl": "TTL" },
              ExpressionAttributeValues: { ":nowSec": nowSeconds(), ":email": invite.userEmail },
            },
          },
          {
            Delete: {
              TableName: tableName(),
              Key: keys.inviteEmailLock(clientId, String(invite.userEmail)),
              ConditionExpression: "inviteId = :id",
              ExpressionAttributeValues: { ":id": inviteId },
            },
          },
          {
            Put: {
              TableName: tableName(),
              Item: {
                ...keys.member(clientId, userId),
                entity: "member",
                clientId,
                userId,
                roles,
                memberCreated: now,
                memberUpdated: now,
                joinedByInvite: inviteId,
              },
              ConditionExpression: "attribute_not_exists(pKey)",
            },
          },
          {
            Update: {
              TableName: tableName(),
              Key: keys.client(clientId),
              UpdateExpression:
                "ADD memberCount :one, adminCount :ad, ownerCount :od SET clientUpdated = :now",
              ConditionExpression: "attribute_exists(pKey) AND clientStatus = :active",
              ExpressionAttributeValues: {
                ":one": 1,
                ":ad": Number(roles.includes("admin")),
                ":od": Number(roles.includes("owner")),
                ":now": now,
                ":active": "active",
              },
            },
          },
          {
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
        ],
      }),
    );
  } catch (error) {
    const codes = transactionCancellationCodes(error);
    if (!codes) throw error;
    if (codes[0] === "ConditionalCheckFailed" || codes[1] === "ConditionalCheckFailed")
      throw notFound(INVITE_NOT_FOUND);
    if (codes[2] === "ConditionalCheckFailed") throw conflict("User is already a member of this client");
    if (codes[3] === "ConditionalCheckFailed") throw conflict("Client is no longer accepting members");
    if (codes[4] === "ConditionalCheckFailed")
      throw badRequest(`A user can belong to at most ${MAX_CLIENTS_PER_USER} clients`);
    if (codes.includes("TransactionConflict")) throw conflict("The invite changed concurrently; retry");
    throw error;
  }
  const user = await requireUser(userId);
  await createNotification(
    { kind: "client", clientId },
    {
      type: "invitation",
      title: "Invitation accepted",
      message: `${user.userEmail} joined ${invite.clientName} as ${roles.join(", ")}.`,
    },
  ).catch((error: unknown) => log.warn("Client notification failed", describeError(error)));
  return { clientId, roles };
}

export async function rejectInvite(userId: string, inviteId: string) {
  const invite = await findInviteForInvitee(userId, inviteId);
  await removeInviteItems(String(invite.clientId), inviteId, String(invite.userEmail));
}
