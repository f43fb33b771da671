/**
 * The MSP's team (spec 2.2, 2.3a, 3, 4.14): its members and its invites, and the invitee's side of
 * an MSP invite (listed and answered with the client invites on /api/users/{userId}/invites).
 *
 * Every change to the members' roles or membership is one transaction conditioned on the MSP's
 * `memberVersion` the decision was read with (the last msp_owner and msp_admin rules need the
 * whole team); accepting an invite adds a member and needs no such condition.
 *
 * Invites live in the MSP's partition with a GSI1 entry `EMAIL#<email>` / `MSPINVITE#<inviteId>`
 * and one e-mail lock per (MSP, e-mail); they expire 7 days after creation, and a PUT with roles
 * extends the expiry by 14 days from the current expiry, or from now once that has passed.
 */
import { randomUUID } from "node:crypto";
import { getConfig } from "../config.ts";
import { DeleteCommand, TransactWriteCommand } from "../db/document-client.ts";
import {
  findMsp,
  findMspMember,
  findPendingMspInvite,
  findPendingMspInviteAddressedTo,
  listMembersOfMsp,
  listPendingInvitesOfMsp,
  listPendingMspInvitesAddressedTo,
  MAX_MSP_LIST_ITEMS,
  type MspInviteEmailLockItem,
  type MspInviteItem,
  type MspMemberItem,
  mspKeys,
} from "../db/entities/msp.ts";
import { findUser, type UserItem, userKeys } from "../db/entities/user.ts";
import {
  cancelledSteps,
  homeDb,
  nowIso,
  nowSeconds,
  type TransactionStep,
  tableName,
  transactItemsOf,
} from "../db/store.ts";
import { sendEmail } from "../email.ts";
import { type PageRequest, paginate } from "../http/pagination.ts";
import type { MspAccess } from "./access.ts";
import { badRequest, conflict, notFound } from "./errors.ts";
import { INVITE_NOT_FOUND, issueInvite } from "./invites.ts";
import { planMspMemberRemoval, planMspRoleChange, requireGrantableRoles } from "./msp-member-rules.ts";
import { MSP_NOT_FOUND } from "./msps.ts";
import type { MspRole } from "./roles.ts";
import { findUserIdByEmail, requireUser } from "./users.ts";

export const MEMBER_NOT_FOUND_IN_MSP = "Member not found in MSP";
export const ALREADY_MSP_MEMBER = "User is already a member of this MSP";
export const MSP_INVITE_LIFETIME_SECONDS = 7 * 86_400;
export const MSP_INVITE_EXTENSION_SECONDS = 14 * 86_400;
export const MAX_PENDING_INVITES_PER_MSP = 100;
const CONCURRENT_CHANGE = "The MSP's team changed concurrently; retry";

/** An MSP member as the API shows it (spec 4.14): no phone. */
export function toApiMspMember(
  member: { userId: string; roles: readonly MspRole[] },
  user: UserItem | undefined,
) {
  return {
    userId: member.userId,
    roles: [...member.roles],
    userEmail: user?.userEmail ?? "",
    userFirstName: user?.userFirstName ?? "",
    userLastName: user?.userLastName ?? "",
    userCreated: user?.userCreated,
    userUpdated: user?.userUpdated,
  };
}

async function withUsers(members: readonly MspMemberItem[]) {
  const users = await Promise.all(members.map((member) => findUser(member.userId)));
  return members.map((member, index) => toApiMspMember(member, users[index]));
}

export async function listMspTeam(access: MspAccess, page: PageRequest) {
  const { items, pagination } = paginate(await listMembersOfMsp(access.mspId), page);
  return { members: await withUsers(items), pagination };
}

export async function getMspTeamMember(access: MspAccess, userId: string) {
  const member = await findMspMember(access.mspId, userId);
  if (!member) throw notFound(MEMBER_NOT_FOUND_IN_MSP);
  return (await withUsers([member]))[0]!;
}

/** The team and the version it was read at (a strongly consistent read of both). */
async function teamAt(mspId: string) {
  const [msp, members] = await Promise.all([findMsp(mspId), listMembersOfMsp(mspId)]);
  if (!msp) throw notFound(MSP_NOT_FOUND);
  return { version: msp.memberVersion, members };
}

const BUMP_VERSION = "bumpMemberVersion";
const bumpVersion = (mspId: string, version: number, now: string): TransactionStep => ({
  name: BUMP_VERSION,
  action: {
    Update: {
      TableName: tableName(),
      Key: mspKeys.item(mspId),
      UpdateExpression: "SET memberVersion = :next, mspUpdated = :now",
      ConditionExpression:
        "attribute_exists(pKey) AND (memberVersion = :read OR (attribute_not_exists(memberVersion) AND :read = :zero))",
      ExpressionAttributeValues: { ":next": version + 1, ":read": version, ":zero": 0, ":now": now },
    },
  },
});

async function writeTeamSteps(steps: TransactionStep[]): Promise<void> {
  try {
    await homeDb().send(new TransactWriteCommand({ TransactItems: transactItemsOf(steps) }));
  } catch (error) {
    if (cancelledSteps(error, steps)) throw conflict(CONCURRENT_CHANGE);
    throw error;
  }
}

/** PUT /api/msps/{mspId}/members/{userId}: replace the member's MSP roles. */
export async function updateMspTeamMember(
  access: MspAccess,
  userId: string,
  requested: string[] | undefined,
) {
  const { version, members } = await teamAt(access.mspId);
  const member = members.find((item) => item.userId === userId);
  if (!member) throw notFound(MEMBER_NOT_FOUND_IN_MSP);
  const roles = planMspRoleChange({
    actor: access,
    currentRoles: member.roles,
    requestedRoles: requested,
    members,
  });
  const now = nowIso();
  await writeTeamSteps([
    bumpVersion(access.mspId, version, now),
    {
      name: "setMspMemberRoles",
      action: {
        Update: {
          TableName: tableName(),
          Key: mspKeys.member(access.mspId, userId),
          UpdateExpression: "SET #roles = :roles, memberUpdated = :now",
          ConditionExpression: "attribute_exists(pKey)",
          ExpressionAttributeNames: { "#roles": "roles" },
          ExpressionAttributeValues: { ":roles": roles, ":now": now },
        },
      },
    },
  ]);
  return { userId, roles };
}

/** DELETE /api/msps/{mspId}/members/{userId}: the member goes, and the MSP leaves the user's userMsps. */
export async function removeMspTeamMember(access: MspAccess, userId: string): Promise<void> {
  const { version, members } = await teamAt(access.mspId);
  const member = members.find((item) => item.userId === userId);
  if (!member) throw notFound(MEMBER_NOT_FOUND_IN_MSP);
  planMspMemberRemoval({ actor: access, targetRoles: member.roles, members });
  const now = nowIso();
  await writeTeamSteps([
    bumpVersion(access.mspId, version, now),
    {
      name: "deleteMspMember",
      action: {
        Delete: {
          TableName: tableName(),
          Key: mspKeys.member(access.mspId, userId),
          ConditionExpression: "attribute_exists(pKey)",
        },
      },
    },
    {
      name: "removeMspFromUser",
      action: {
        Update: {
          TableName: tableName(),
          Key: userKeys.item(userId),
          UpdateExpression: "DELETE userMsps :msp SET userUpdated = :now",
          ConditionExpression: "attribute_exists(pKey)",
          ExpressionAttributeValues: { ":msp": new Set([access.mspId]), ":now": now },
        },
      },
    },
  ]);
}

// ---------------------------------------------------------------- invites (the MSP's side)

/** An MSP invite as the MSP API shows it (spec 2.3a). */
export const toApiMspInvite = (invite: MspInviteItem) => ({
  inviteId: invite.inviteId,
  userEmail: invite.userEmail,
  roles: [...invite.roles],
  inviteExpiry: invite.inviteExpiry,
  inviteCreated: invite.inviteCreated,
  inviteUpdated: invite.inviteUpdated,
});

/** An MSP invite as its invitee sees it, beside their client invites. */
export const toApiInviteeMspInvite = (invite: MspInviteItem) => ({
  ...toApiMspInvite(invite),
  inviteType: "msp" as const,
  mspId: invite.mspId,
  mspName: invite.mspName,
});

/** The expiry after a PUT with roles: 14 days from the current expiry, or from now once it passed. */
export function extendedExpiry(currentTtl: number, nowSec: number): number {
  return Math.max(currentTtl, nowSec) + MSP_INVITE_EXTENSION_SECONDS;
}

const isoOfSeconds = (seconds: number) => new Date(seconds * 1000).toISOString();

async function sendMspInviteEmail(invite: MspInviteItem, inviter: UserItem | undefined) {
  const who = inviter
    ? `${inviter.userFirstName} ${inviter.userLastName}`.trim() || inviter.userEmail
    : "A member";
  await sendEmail({
    to: invite.userEmail,
    subject: `You are invited to join ${invite.mspName}`,
    text: [
      `${who} invited you to join the managed-service provider ${invite.mspName} as ${invite.roles.join(", ")}.`,
      "",
      `Accept the invitation: ${getConfig().appUrl}/invites/${invite.inviteId}`,
      "",
      `The invitation expires on ${new Date(invite.TTL * 1000).toUTCString()}.`,
    ].join("\n"),
  });
}

const REMOVE_INVITE = "removeMspInvite";
const RELEASE_EMAIL_LOCK = "releaseMspInviteEmailLock";

const releaseEmailLock = (invite: MspInviteItem): TransactionStep => ({
  name: RELEASE_EMAIL_LOCK,
  action: {
    Delete: {
      TableName: tableName(),
      Key: mspKeys.inviteEmailLock(invite.mspId, invite.userEmail),
      ConditionExpression: "inviteId = :id",
      ExpressionAttributeValues: { ":id": invite.inviteId },
    },
  },
});

/** POST /api/msps/{mspId}/invites {userEmail, roles}. */
export async function createMspInvite(access: MspAccess, input: { userEmail: string; roles?: string[] }) {
  const roles = requireGrantableRoles(input.roles, access);
  const email = input.userEmail.toLowerCase();
  const [msp, existingUserId, pending, inviter] = await Promise.all([
    findMsp(access.mspId),
    findUserIdByEmail(email),
    listPendingInvitesOfMsp(access.mspId),
    findUser(access.userId),
  ]);
  if (!msp) throw notFound(MSP_NOT_FOUND);
  if (existingUserId && (await findMspMember(access.mspId, existingUserId)))
    throw conflict(ALREADY_MSP_MEMBER);
  if (pending.length >= MAX_PENDING_INVITES_PER_MSP)
    throw badRequest(`An MSP can have at most ${MAX_PENDING_INVITES_PER_MSP} pending invites`);
  const inviteId = randomUUID();
  const now = nowIso();
  const ttl = nowSeconds() + MSP_INVITE_LIFETIME_SECONDS;
  const invite: MspInviteItem = {
    ...mspKeys.invite(access.mspId, inviteId),
    ...mspKeys.inviteByEmail(email, inviteId),
    entity: "mspInvite",
    inviteId,
    mspId: access.mspId,
    mspName: msp.mspName,
    roles,
    userEmail: email,
    invitedBy: access.userId,
    inviteCreated: now,
    inviteUpdated: now,
    inviteExpiry: isoOfSeconds(ttl),
    TTL: ttl,
  };
  const lock: MspInviteEmailLockItem = {
    ...mspKeys.inviteEmailLock(access.mspId, email),
    entity: "mspInviteEmailLock",
    inviteId,
    TTL: ttl,
  };
  await issueInvite({
    invite,
    lock,
    send: () => sendMspInviteEmail(invite, inviter),
    withdraw: () => removeInviteItems(invite),
    logFields: { mspId: access.mspId, inviteId },
    existingUserId,
    notification: {
      title: `Invitation to ${invite.mspName}`,
      message: `You are invited to join the MSP ${invite.mspName} as ${roles.join(", ")}.`,
    },
  });
  return toApiMspInvite(invite);
}

async function removeInviteItems(invite: MspInviteItem, onlyForEmail?: string): Promise<void> {
  const steps: TransactionStep[] = [
    {
      name: REMOVE_INVITE,
      action: {
        Delete: {
          TableName: tableName(),
          Key: mspKeys.invite(invite.mspId, invite.inviteId),
          ConditionExpression: onlyForEmail
            ? "attribute_exists(pKey) AND userEmail = :email"
            : "attribute_exists(pKey)",
          ...(onlyForEmail ? { ExpressionAttributeValues: { ":email": onlyForEmail } } : {}),
        },
      },
    },
    releaseEmailLock(invite),
  ];
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
    new DeleteCommand({ TableName: tableName(), Key: mspKeys.invite(invite.mspId, invite.inviteId) }),
  );
}

async function requirePendingMspInvite(mspId: string, inviteId: string): Promise<MspInviteItem> {
  const invite = await findPendingMspInvite(mspId, inviteId);
  if (!invite) throw notFound(INVITE_NOT_FOUND);
  return invite;
}

export async function listMspInvites(access: MspAccess, page: PageRequest) {
  const { items, pagination } = paginate(await listPendingInvitesOfMsp(access.mspId), page);
  return { invites: items.map(toApiMspInvite), pagination };
}

/** PUT /api/msps/{mspId}/invites/{inviteId} {roles}: roles replaced, expiry extended by 14 days. */
export async function updateMspInvite(access: MspAccess, inviteId: string, input: { roles?: string[] }) {
  const roles = requireGrantableRoles(input.roles, access);
  const invite = await requirePendingMspInvite(access.mspId, inviteId);
  const ttl = extendedExpiry(invite.TTL, nowSeconds());
  const now = nowIso();
  const steps: TransactionStep[] = [
    {
      name: "updateMspInvite",
      action: {
        Update: {
          TableName: tableName(),
          Key: mspKeys.invite(access.mspId, inviteId),
          UpdateExpression: "SET #roles = :roles, #ttl = :ttl, inviteExpiry = :expiry, inviteUpdated = :now",
          ConditionExpression: "attribute_exists(pKey) AND #ttl = :read",
          ExpressionAttributeNames: { "#roles": "roles", "#ttl": "TTL" },
          ExpressionAttributeValues: {
            ":roles": roles,
            ":ttl": ttl,
            ":expiry": isoOfSeconds(ttl),
            ":now": now,
            ":read": invite.TTL,
          },
        },
      },
    },
    {
      name: "renewMspInviteEmailLock",
      action: {
        Update: {
          TableName: tableName(),
          Key: mspKeys.inviteEmailLock(access.mspId, invite.userEmail),
          UpdateExpression: "SET #ttl = :ttl",
          ConditionExpression: "inviteId = :id",
          ExpressionAttributeNames: { "#ttl": "TTL" },
          ExpressionAttributeValues: { ":ttl": ttl, ":id": inviteId },
        },
      },
    },
  ];
  try {
    await homeDb().send(new TransactWriteCommand({ TransactItems: transactItemsOf(steps) }));
  } catch (error) {
    if (cancelledSteps(error, steps)) throw notFound(INVITE_NOT_FOUND);
    throw error;
  }
  return toApiMspInvite({ ...invite, roles, TTL: ttl, inviteExpiry: isoOfSeconds(ttl), inviteUpdated: now });
}

export async function cancelMspInvite(access: MspAccess, inviteId: string): Promise<void> {
  await removeInviteItems(await requirePendingMspInvite(access.mspId, inviteId));
}

// ---------------------------------------------------------------- invites (the invitee's side)

const emailOf = async (userId: string) => (await requireUser(userId)).userEmail.toLowerCase();

export async function listMspInvitesAddressedTo(userId: string): Promise<MspInviteItem[]> {
  return listPendingMspInvitesAddressedTo(await emailOf(userId));
}

/** An MSP invite addressed to this user, or undefined (someone else's is not theirs to see). */
export async function findMspInviteForInvitee(userId: string, inviteId: string) {
  return findPendingMspInviteAddressedTo(await emailOf(userId), inviteId);
}

const ADD_MSP_MEMBER = "addMspMember";
const ADD_MSP_TO_USER = "addMspToUser";

/** Accept: the invite and its lock go, the member is written, the user lists the MSP; one transaction. */
export async function acceptMspInvite(userId: string, invite: MspInviteItem) {
  const now = nowIso();
  const member: MspMemberItem = {
    ...mspKeys.member(invite.mspId, userId),
    entity: "mspMember",
    mspId: invite.mspId,
    userId,
    roles: invite.roles,
    memberCreated: now,
    memberUpdated: now,
  };
  const steps: TransactionStep[] = [
    {
      name: REMOVE_INVITE,
      action: {
        Delete: {
          TableName: tableName(),
          Key: mspKeys.invite(invite.mspId, invite.inviteId),
          ConditionExpression: "attribute_exists(pKey) AND #ttl > :nowSec AND userEmail = :email",
          ExpressionAttributeNames: { "#ttl": "TTL" },
          ExpressionAttributeValues: { ":nowSec": nowSeconds(), ":email": invite.userEmail },
        },
      },
    },
    releaseEmailLock(invite),
    {
      name: ADD_MSP_MEMBER,
      action: {
        Put: { TableName: tableName(), Item: member, ConditionExpression: "attribute_not_exists(pKey)" },
      },
    },
    {
      name: ADD_MSP_TO_USER,
      action: {
        Update: {
          TableName: tableName(),
          Key: userKeys.item(userId),
          UpdateExpression: "ADD userMsps :msp SET userUpdated = :now",
          ConditionExpression:
            "attribute_exists(pKey) AND (attribute_not_exists(userMsps) OR size(userMsps) < :max)",
          ExpressionAttributeValues: {
            ":msp": new Set([invite.mspId]),
            ":now": now,
            ":max": MAX_MSP_LIST_ITEMS,
          },
        },
      },
    },
  ];
  try {
    await homeDb().send(new TransactWriteCommand({ TransactItems: transactItemsOf(steps) }));
  } catch (error) {
    const failed = cancelledSteps(error, steps)?.failed;
    if (failed?.includes(REMOVE_INVITE) || failed?.includes(RELEASE_EMAIL_LOCK))
      throw notFound(INVITE_NOT_FOUND);
    if (failed?.includes(ADD_MSP_MEMBER)) throw conflict(ALREADY_MSP_MEMBER);
    if (failed) throw conflict("The invite changed concurrently; retry");
    throw error;
  }
  return { mspId: invite.mspId, roles: [...invite.roles] };
}

export async function rejectMspInvite(invite: MspInviteItem): Promise<void> {
  await removeInviteItems(invite, invite.userEmail);
}
