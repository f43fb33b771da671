/**
 * Client invites (spec 2.3, 3, 4.3): the client configuration of the one invite lifecycle
 * (lib/domain/invite-lifecycle.ts). An invite lives in the client's partition with a GSI1 entry
 * under the invitee's e-mail and an e-mail lock per (client, e-mail); it expires 7 days after
 * creation or the last re-send.
 *
 * States: pending -> accepted (PUT acceptInvite true: membership, userClients and the invite's
 * removal in one transaction) | rejected (invitee DELETE, or PUT acceptInvite false) | cancelled
 * (client DELETE) | expired (TTL).
 *
 * Access is checked before these functions run (lib/api/dispatch.ts): the client's side takes the
 * caller's ClientAccess (admin role), the invitee's side the caller's own user id (self).
 */
import { clientInviteKind, type InviteItem } from "#lib/db/entities/invite.ts";
import { findUser } from "#lib/db/entities/user.ts";
import { keys } from "#lib/db/keys.ts";
import { type PageRequest, paginate } from "#lib/db/pagination.ts";
import { nowSeconds, tableName } from "#lib/db/store.ts";
import { describeError, log } from "#lib/log.ts";
import { badRequest, conflict, forbidden, notFound, upstreamFailed } from "#lib/shared/errors.ts";
import { type ClientRole, normaliseRoles } from "#lib/shared/roles.ts";
import type { ClientAccess } from "./access.ts";
import {
  addClientToUserStep,
  CLIENT_NOT_FOUND,
  getClientItem,
  getMemberItem,
  MAX_CLIENTS_PER_USER,
} from "./clients.ts";
import { INVITE_NOT_FOUND, inviteLifecycle } from "./invite-lifecycle.ts";
import { createNotification } from "./notifications.ts";
import { requireUser } from "./users.ts";

export { INVITE_EXISTS, INVITE_NOT_FOUND } from "./invite-lifecycle.ts";
export const INVITE_LIFETIME_SECONDS = 7 * 86_400;
export const MAX_PENDING_INVITES_PER_CLIENT = 100;

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

/** The client invites: a client's admins invite; accepting joins the client (counted) and lists it on the user. */
const clientInvites = inviteLifecycle<InviteItem, ClientRole>({
  kind: clientInviteKind,
  parentField: "clientId",
  lifetimeSeconds: INVITE_LIFETIME_SECONDS,
  maxPending: MAX_PENDING_INVITES_PER_CLIENT,
  messages: {
    alreadyMember: "User is already a member of this client",
    tooManyPending: `A client can have at most ${MAX_PENDING_INVITES_PER_CLIENT} pending invites`,
  },
  async parentName(clientId) {
    const client = await getClientItem(clientId);
    if (!client) throw notFound(CLIENT_NOT_FOUND);
    if (client.clientStatus !== "active") throw conflict("Client is scheduled for deletion");
    return String(client.clientName);
  },
  isMember: async (clientId, userId) => (await getMemberItem(clientId, userId)) !== undefined,
  newInvite: (fields, { parentId, parentName }) => ({
    ...fields,
    entity: "invite",
    clientId: parentId,
    clientName: parentName,
  }),
  parentNameOf: (invite) => invite.clientName,
  expiryFields: () => ({}),
  describe: { email: (name) => name, notification: (name) => name },
  memberItem: (invite, userId, now) => ({
    ...keys.member(invite.clientId, userId),
    entity: "member",
    clientId: invite.clientId,
    userId,
    roles: invite.roles,
    memberCreated: now,
    memberUpdated: now,
    joinedByInvite: invite.inviteId,
  }),
  joinSteps: (invite, userId, now) => [
    {
      step: {
        name: "count member on client",
        action: {
          Update: {
            TableName: tableName(),
            Key: keys.client(invite.clientId),
            UpdateExpression: "ADD memberCount :one, adminCount :ad, ownerCount :od SET clientUpdated = :now",
            ConditionExpression: "attribute_exists(pKey) AND clientStatus = :active",
            ExpressionAttributeValues: {
              ":one": 1,
              ":ad": invite.roles.includes("admin") ? 1 : 0,
              ":od": invite.roles.includes("owner") ? 1 : 0,
              ":now": now,
              ":active": "active",
            },
          },
        },
      },
      refusal: () => conflict("Client is no longer accepting members"),
    },
    {
      step: addClientToUserStep("add client to user", userId, invite.clientId, now),
      refusal: () => badRequest(`A user can belong to at most ${MAX_CLIENTS_PER_USER} clients`),
    },
  ],
});

function assertCanGrant(actorRoles: readonly string[], roles: readonly string[]) {
  if (roles.includes("owner") && !actorRoles.includes("owner"))
    throw forbidden("Only an owner can invite an owner");
}

/** POST /api/clients/{clientId}/invites: the caller holds the admin role (checked before). */
export async function createInvite(access: ClientAccess, input: { email: string; role: string }) {
  const roles = normaliseRoles([input.role]);
  assertCanGrant(access.roles, roles);
  const invite = await clientInvites.create(access.clientId, access.userId, input.email.toLowerCase(), roles);
  return toApiInvite(invite);
}

export async function listClientInvites(access: ClientAccess, page: PageRequest) {
  const { items, pagination } = paginate(await clientInvites.listPendingOf(access.clientId), page);
  return { invites: items.map(toApiInvite), pagination };
}

export async function getClientInvite(access: ClientAccess, inviteId: string) {
  return toApiInvite(await clientInvites.get(access.clientId, inviteId));
}

/** PUT /api/clients/{clientId}/invites/{inviteId}: replace roles and/or re-send (renewing the 7 days). */
export async function updateClientInvite(
  access: ClientAccess,
  inviteId: string,
  input: { roles?: string[]; resend?: boolean },
) {
  const { clientId, userId: callerId } = access;
  const invite = await clientInvites.get(clientId, inviteId);
  const roles = input.roles ? normaliseRoles(input.roles) : invite.roles;
  assertCanGrant(access.roles, roles);
  const ttl = input.resend ? nowSeconds() + INVITE_LIFETIME_SECONDS : invite.TTL;
  const updated = await clientInvites.renew(invite, roles, ttl, "unexpired");
  if (input.resend) {
    try {
      await clientInvites.sendInviteEmail(updated, await findUser(callerId));
    } catch (error) {
      log.error("Invite e-mail re-send failed", { clientId, inviteId, ...describeError(error) });
      throw upstreamFailed("The invite was updated but the email could not be sent; try again");
    }
  }
  return toApiInvite(updated);
}

export async function cancelClientInvite(access: ClientAccess, inviteId: string) {
  await clientInvites.cancel(access.clientId, inviteId);
}

// ---- the invitee's side: /api/users/{userId}/invites ----

/** An invite addressed to this user, or 404 (also for someone else's invite: no probing). */
async function findInviteForInvitee(userId: string, inviteId: string): Promise<InviteItem> {
  const invite = await clientInvites.findAddressedTo(userId, inviteId);
  if (!invite) throw notFound(INVITE_NOT_FOUND);
  return invite;
}

/** The pending client invites addressed to the user (the invitee's list adds the MSP invites). */
export function listPendingClientInvitesOfInvitee(userId: string): Promise<InviteItem[]> {
  return clientInvites.listAddressedTo(userId);
}

export async function getInviteeInvite(userId: string, inviteId: string) {
  return toApiInvite(await findInviteForInvitee(userId, inviteId));
}

/** Accept: the membership, the client's count and the user's userClients, with the invite's removal. */
export async function acceptInvite(
  userId: string,
  inviteId: string,
): Promise<{ clientId: string; roles: ClientRole[] }> {
  const invite = await findInviteForInvitee(userId, inviteId);
  const { clientId, roles } = invite;
  await clientInvites.accept(userId, invite);
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
  await clientInvites.decline(await findInviteForInvitee(userId, inviteId));
}
