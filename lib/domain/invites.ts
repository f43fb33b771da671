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
import { DeleteCommand, TransactWriteCommand } from "../db/document-client.ts";
import {
  findPendingInvite,
  findPendingInviteAddressedTo,
  type InviteEmailLockItem,
  type InviteItem,
  inviteKeys,
  listPendingInvitesAddressedTo,
  listPendingInvitesOfClient,
} from "../db/entities/invite.ts";
import { keys } from "../db/keys.ts";
import {
  cancelledSteps,
  homeDb,
  type Item,
  nowIso,
  nowSeconds,
  type TransactionStep,
  tableName,
  transactItemsOf,
} from "../db/store.ts";
import { sendEmail } from "../email.ts";
import { type PageRequest, paginate } from "../http/pagination.ts";
import { describeError, log } from "../log.ts";
import type { ClientAccess } from "./access.ts";
import {
  addClientToUserStep,
  CLIENT_NOT_FOUND,
  getClientItem,
  getMemberItem,
  MAX_CLIENTS_PER_USER,
} from "./clients.ts";
import { badRequest, conflict, forbidden, notFound, upstreamFailed } from "./errors.ts";
import { createNotification } from "./notifications.ts";
import { type ClientRole, normaliseRoles } from "./roles.ts";
import { findUserIdByEmail, requireUser } from "./users.ts";

export const INVITE_LIFETIME_SECONDS = 7 * 86_400;
export const MAX_PENDING_INVITES_PER_CLIENT = 100;
export const INVITE_NOT_FOUND = "Invite not found";
export const INVITE_EXISTS = "Invite already exists for this email";

/** The invite as the API shows it: the response schema (lib/api/operations/invites.ts) picks its fields. */
export function toApiInvite(invite: InviteItem) {
  return {
    inviteId: invite.inviteId,
    clientName: invite.clientName,
    pKey: "INVITATION" as const,
    sKey: invite.inviteId,
    roles: invite.roles,
    userEmail: invite.userEmail,
    parentId: invite.clientId,
    TTL: invite.TTL,
    inviteExpiresAt: new Date(invite.TTL * 1000).toISOString(),
    invitedBy: invite.invitedBy,
    inviteCreated: invite.inviteCreated,
    inviteUpdated: invite.inviteUpdated,
  };
}
export type ApiInvite = ReturnType<typeof toApiInvite>;

function assertCanGrant(actorRoles: readonly string[], roles: readonly string[]) {
  if (roles.includes("owner") && !actorRoles.includes("owner"))
    throw forbidden("Only an owner can invite an owner");
}

async function sendInviteEmail(invite: InviteItem, inviter: Item | undefined) {
  const link = `${getConfig().appUrl}/invites/${invite.inviteId}`;
  const who = inviter
    ? `${inviter.userFirstName} ${inviter.userLastName}`.trim() || String(inviter.userEmail)
    : "A member";
  const expires = new Date(invite.TTL * 1000).toUTCString();
  await sendEmail({
    to: invite.userEmail,
    subject: `You are invited to join ${invite.clientName}`,
    text: [
      `${who} invited you to join ${invite.clientName} as ${invite.roles.join(", ")}.`,
      "",
      `Accept the invitation: ${link}`,
      "",
      `The invitation expires on ${expires}.`,
    ].join("\n"),
  });
}

async function getPendingInvite(clientId: string, inviteId: string): Promise<InviteItem> {
  const invite = await findPendingInvite(clientId, inviteId);
  if (!invite) throw notFound(INVITE_NOT_FOUND);
  return invite;
}

/** What a cancelled transaction means for the caller, read by step name; undefined rethrows the error. */
type Explain = (cancelled: { failed: string[]; conflict: boolean }) => Error | undefined;

/** Write the steps in one home-region transaction; a cancellation becomes the caller's answer. */
async function writeInviteSteps(steps: TransactionStep[], explain: Explain): Promise<void> {
  try {
    await homeDb().send(new TransactWriteCommand({ TransactItems: transactItemsOf(steps) }));
  } catch (error) {
    const cancelled = cancelledSteps(error, steps);
    throw (cancelled && explain(cancelled)) ?? error;
  }
}

// Step names of the invite transactions, read back on cancellation.
const WRITE_INVITE = "write invite";
const CLAIM_EMAIL_LOCK = "claim e-mail lock";
const REMOVE_INVITE = "remove invite";

/**
 * A new invite and its e-mail lock in one transaction (client and MSP invites alike): 409
 * `Invite already exists for this email` while another live invite holds the lock (an expired
 * invite's lock no longer counts).
 */
export async function writeNewInvite(
  invite: Record<string, unknown>,
  lock: Record<string, unknown>,
): Promise<void> {
  await writeInviteSteps(
    [
      {
        name: WRITE_INVITE,
        action: {
          Put: { TableName: tableName(), Item: invite, ConditionExpression: "attribute_not_exists(pKey)" },
        },
      },
      {
        name: CLAIM_EMAIL_LOCK,
        action: {
          Put: {
            TableName: tableName(),
            Item: lock,
            ConditionExpression: "attribute_not_exists(pKey) OR #ttl <= :now",
            ExpressionAttributeNames: { "#ttl": "TTL" },
            ExpressionAttributeValues: { ":now": nowSeconds() },
          },
        },
      },
    ],
    ({ failed }) => (failed.includes(CLAIM_EMAIL_LOCK) ? conflict(INVITE_EXISTS) : undefined),
  );
}

/** What issueInvite needs of a new client or MSP invite. */
export interface NewInvite {
  invite: Record<string, unknown>;
  lock: Record<string, unknown>;
  /** Sends the invite e-mail. */
  send: () => Promise<void>;
  /** Removes the invite and its lock again. */
  withdraw: () => Promise<void>;
  /** Ids named in the log line of a failed e-mail. */
  logFields: Record<string, unknown>;
  /** The invitee's user id when they already have an account: they are told in their inbox too. */
  existingUserId: string | undefined;
  notification: { title: string; message: string };
}

/**
 * Issue a new invite (client and MSP invites alike): written with its e-mail lock, then e-mailed.
 * Nothing is half-done: an invite whose e-mail failed is withdrawn, and the caller gets 502. An
 * invitee who already has an account also gets an inbox notification (best effort).
 */
export async function issueInvite(invite: NewInvite): Promise<void> {
  await writeNewInvite(invite.invite, invite.lock);
  try {
    await invite.send();
  } catch (error) {
    log.error("Invite e-mail failed; withdrawing the invite", {
      ...invite.logFields,
      ...describeError(error),
    });
    await invite.withdraw();
    throw upstreamFailed("Could not send the invite email; the invite was not created");
  }
  if (invite.existingUserId) {
    await createNotification(
      { kind: "user", userId: invite.existingUserId },
      { type: "invitation", ...invite.notification },
    ).catch((error: unknown) => log.warn("Invite notification failed", describeError(error)));
  }
}
const RELEASE_EMAIL_LOCK = "release e-mail lock";
const UPDATE_INVITE = "update invite";
const RENEW_EMAIL_LOCK = "renew e-mail lock";
const ADD_MEMBER = "add member";
const COUNT_MEMBER = "count member on client";
const ADD_CLIENT_TO_USER = "add client to user";

/** Delete the e-mail lock only while it still belongs to this invite (a newer invite may hold it). */
const releaseEmailLock = (invite: InviteItem): TransactionStep => ({
  name: RELEASE_EMAIL_LOCK,
  action: {
    Delete: {
      TableName: tableName(),
      Key: inviteKeys.emailLock(invite.clientId, invite.userEmail),
      ConditionExpression: "inviteId = :id",
      ExpressionAttributeValues: { ":id": invite.inviteId },
    },
  },
});

/** POST /api/clients/{clientId}/invites: the caller holds the admin role (checked before). */
export async function createInvite(access: ClientAccess, input: { email: string; role: string }) {
  const { clientId, userId: callerId } = access;
  const roles = normaliseRoles([input.role]);
  assertCanGrant(access.roles, roles);
  const email = input.email.toLowerCase();
  const [client, existingUserId, pending, inviter] = await Promise.all([
    getClientItem(clientId),
    findUserIdByEmail(email),
    listPendingInvitesOfClient(clientId),
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
  const invite: InviteItem = {
    ...inviteKeys.item(clientId, inviteId),
    ...inviteKeys.byEmail(email, inviteId),
    entity: "invite",
    inviteId,
    clientId,
    clientName: String(client.clientName),
    roles,
    userEmail: email,
    invitedBy: callerId,
    inviteCreated: now,
    inviteUpdated: now,
    TTL: ttl,
  };
  const lock: InviteEmailLockItem = {
    ...inviteKeys.emailLock(clientId, email),
    entity: "inviteEmailLock",
    inviteId,
    TTL: ttl,
  };
  await issueInvite({
    invite,
    lock,
    send: () => sendInviteEmail(invite, inviter),
    withdraw: () => removeInviteItems(invite),
    logFields: { clientId, inviteId },
    existingUserId,
    notification: {
      title: `Invitation to ${invite.clientName}`,
      message: `You are invited to join ${invite.clientName} as ${roles.join(", ")}.`,
    },
  });
  return toApiInvite(invite);
}

/**
 * Delete an invite and, when it still points at this invite, its e-mail lock. With `onlyForEmail`
 * (the invitee's side) the invite must still be addressed to that e-mail.
 */
async function removeInviteItems(invite: InviteItem, onlyForEmail?: string): Promise<void> {
  const removeInvite: TransactionStep = {
    name: REMOVE_INVITE,
    action: {
      Delete: {
        TableName: tableName(),
        Key: inviteKeys.item(invite.clientId, invite.inviteId),
        ConditionExpression: onlyForEmail
          ? "attribute_exists(pKey) AND userEmail = :email"
          : "attribute_exists(pKey)",
        ...(onlyForEmail ? { ExpressionAttributeValues: { ":email": onlyForEmail } } : {}),
      },
    },
  };
  const steps = [removeInvite, releaseEmailLock(invite)];
  try {
    await homeDb().send(new TransactWriteCommand({ TransactItems: transactItemsOf(steps) }));
    return;
  } catch (error) {
    const failed = cancelledSteps(error, steps)?.failed ?? [];
    if (failed.includes(REMOVE_INVITE)) throw notFound(INVITE_NOT_FOUND);
    if (!failed.includes(RELEASE_EMAIL_LOCK)) throw error;
  }
  // The lock belongs to a newer invite: remove only this one.
  await homeDb().send(
    new DeleteCommand({ TableName: tableName(), Key: inviteKeys.item(invite.clientId, invite.inviteId) }),
  );
}

export async function listClientInvites(access: ClientAccess, page: PageRequest) {
  const { items, pagination } = paginate(await listPendingInvitesOfClient(access.clientId), page);
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
  const roles = input.roles ? normaliseRoles(input.roles) : invite.roles;
  assertCanGrant(access.roles, roles);
  const ttl = input.resend ? nowSeconds() + INVITE_LIFETIME_SECONDS : invite.TTL;
  const now = nowIso();
  await writeInviteSteps(
    [
      {
        name: UPDATE_INVITE,
        action: {
          Update: {
            TableName: tableName(),
            Key: inviteKeys.item(clientId, inviteId),
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
      },
      {
        name: RENEW_EMAIL_LOCK,
        action: {
          Update: {
            TableName: tableName(),
            Key: inviteKeys.emailLock(clientId, invite.userEmail),
            UpdateExpression: "SET #ttl = :ttl",
            ConditionExpression: "inviteId = :id",
            ExpressionAttributeNames: { "#ttl": "TTL" },
            ExpressionAttributeValues: { ":ttl": ttl, ":id": inviteId },
          },
        },
      },
    ],
    // gone, expired, or its lock no longer points at it
    ({ failed }) => (failed.length > 0 ? notFound(INVITE_NOT_FOUND) : undefined),
  );
  const updated: InviteItem = { ...invite, roles, TTL: ttl, inviteUpdated: now };
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
  await removeInviteItems(await getPendingInvite(access.clientId, inviteId));
}

// ---- the invitee's side: /api/users/{userId}/invites ----

async function inviteeEmail(userId: string): Promise<string> {
  return String((await requireUser(userId)).userEmail).toLowerCase();
}

/** An invite addressed to this user, or 404 (also for someone else's invite: no probing). */
async function findInviteForInvitee(userId: string, inviteId: string): Promise<InviteItem> {
  const invite = await findPendingInviteAddressedTo(await inviteeEmail(userId), inviteId);
  if (!invite) throw notFound(INVITE_NOT_FOUND);
  return invite;
}

/** The pending client invites addressed to the user (the invitee's list adds the MSP invites). */
export async function listPendingClientInvitesOfInvitee(userId: string): Promise<InviteItem[]> {
  return listPendingInvitesAddressedTo(await inviteeEmail(userId));
}

export async function listInviteeInvites(userId: string, page: PageRequest) {
  const invites = await listPendingInvitesAddressedTo(await inviteeEmail(userId));
  const { items, pagination } = paginate(invites, page);
  return { invites: items.map(toApiInvite), pagination };
}

export async function getInviteeInvite(userId: string, inviteId: string) {
  return toApiInvite(await findInviteForInvitee(userId, inviteId));
}

/**
 * The steps of accepting an invite, in one transaction: the invite and its lock go, the
 * membership is written, the client counts it (while active) and the user lists the client
 * (within the per-user cap).
 */
function acceptSteps(invite: InviteItem, userId: string, now: string): TransactionStep[] {
  const { clientId, inviteId, roles } = invite;
  return [
    {
      name: REMOVE_INVITE,
      action: {
        Delete: {
          TableName: tableName(),
          Key: inviteKeys.item(clientId, inviteId),
          ConditionExpression: "attribute_exists(pKey) AND #ttl > :nowSec AND userEmail = :email",
          ExpressionAttributeNames: { "#ttl": "TTL" },
          ExpressionAttributeValues: { ":nowSec": nowSeconds(), ":email": invite.userEmail },
        },
      },
    },
    releaseEmailLock(invite),
    {
      name: ADD_MEMBER,
      action: {
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
    },
    {
      name: COUNT_MEMBER,
      action: {
        Update: {
          TableName: tableName(),
          Key: keys.client(clientId),
          UpdateExpression: "ADD memberCount :one, adminCount :ad, ownerCount :od SET clientUpdated = :now",
          ConditionExpression: "attribute_exists(pKey) AND clientStatus = :active",
          ExpressionAttributeValues: {
            ":one": 1,
            ":ad": roles.includes("admin") ? 1 : 0,
            ":od": roles.includes("owner") ? 1 : 0,
            ":now": now,
            ":active": "active",
          },
        },
      },
    },
    addClientToUserStep(ADD_CLIENT_TO_USER, userId, clientId, now),
  ];
}

export async function acceptInvite(
  userId: string,
  inviteId: string,
): Promise<{ clientId: string; roles: ClientRole[] }> {
  const invite = await findInviteForInvitee(userId, inviteId);
  const { clientId, roles } = invite;
  await writeInviteSteps(acceptSteps(invite, userId, nowIso()), ({ failed, conflict: concurrent }) => {
    if (failed.includes(REMOVE_INVITE) || failed.includes(RELEASE_EMAIL_LOCK))
      return notFound(INVITE_NOT_FOUND);
    if (failed.includes(ADD_MEMBER)) return conflict("User is already a member of this client");
    if (failed.includes(COUNT_MEMBER)) return conflict("Client is no longer accepting members");
    if (failed.includes(ADD_CLIENT_TO_USER))
      return badRequest(`A user can belong to at most ${MAX_CLIENTS_PER_USER} clients`);
    if (concurrent) return conflict("The invite changed concurrently; retry");
    return undefined;
  });
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
  await removeInviteItems(invite, invite.userEmail);
}
