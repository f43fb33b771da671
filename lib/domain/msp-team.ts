/**
 * The MSP's team (spec 2.2, 2.3a, 3, 4.14): its members and its invites, and the invitee's side of
 * an MSP invite (listed and answered with the client invites on /api/users/{userId}/invites).
 *
 * Every change to the members' roles or membership is one transaction conditioned on the MSP's
 * `memberVersion` the decision was read with (the last msp_owner and msp_admin rules need the
 * whole team); accepting an invite adds a member and needs no such condition.
 *
 * The invites are the MSP configuration of the one invite lifecycle (lib/domain/invite-lifecycle.ts):
 * they live in the MSP's partition with a GSI1 entry `EMAIL#<email>` / `MSPINVITE#<inviteId>` and
 * one e-mail lock per (MSP, e-mail); they expire 7 days after creation, and a PUT with roles
 * extends the expiry by 14 days from the current expiry, or from now once that has passed.
 */
import {
  findMsp,
  findMspMember,
  listMembersOfMsp,
  MAX_MSP_LIST_ITEMS,
  type MspInviteItem,
  type MspMemberItem,
  mspInviteKind,
  mspKeys,
} from "#lib/db/entities/msp.ts";
import { findUser, type UserItem, userKeys } from "#lib/db/entities/user.ts";
import { type PageRequest, paginate } from "#lib/db/pagination.ts";
import { commitSteps, nowIso, nowSeconds, type TransactionStep, tableName } from "#lib/db/store.ts";
import { conflict, notFound } from "#lib/shared/errors.ts";
import type { ClientRole, MspRole } from "#lib/shared/roles.ts";
import type { MspAccess } from "./access.ts";
import { INVITE_CHANGED, inviteLifecycle } from "./invite-lifecycle.ts";
import { planMspMemberRemoval, planMspRoleChange, requireGrantableRoles } from "./msp-member-rules.ts";
import { MSP_NOT_FOUND } from "./msps.ts";

export const MEMBER_NOT_FOUND_IN_MSP = "Member not found in MSP";
export const ALREADY_MSP_MEMBER = "User is already a member of this MSP";
export const MSP_INVITE_LIFETIME_SECONDS = 7 * 86_400;
export const MSP_INVITE_EXTENSION_SECONDS = 14 * 86_400;
export const MAX_PENDING_INVITES_PER_MSP = 100;
const CONCURRENT_CHANGE = "The MSP's team changed concurrently; retry";

/** An MSP member as the API shows it (spec 4.14), and a managed client's member on the MSP path: no phone. */
export function toApiMspMember<R extends MspRole | ClientRole>(
  member: { userId: string; roles: readonly R[] },
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
  return toApiMspMember(member, await findUser(member.userId));
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
  await commitSteps(steps, { cancelled: () => conflict(CONCURRENT_CHANGE) });
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

/** The MSP team invites: an MSP's admins invite; accepting joins the team and lists the MSP on the user. */
const mspInvites = inviteLifecycle<MspInviteItem, MspRole>({
  kind: mspInviteKind,
  parentField: "mspId",
  lifetimeSeconds: MSP_INVITE_LIFETIME_SECONDS,
  maxPending: MAX_PENDING_INVITES_PER_MSP,
  messages: {
    alreadyMember: ALREADY_MSP_MEMBER,
    tooManyPending: `An MSP can have at most ${MAX_PENDING_INVITES_PER_MSP} pending invites`,
  },
  async parentName(mspId) {
    const msp = await findMsp(mspId);
    if (!msp) throw notFound(MSP_NOT_FOUND);
    return msp.mspName;
  },
  isMember: async (mspId, userId) => (await findMspMember(mspId, userId)) !== undefined,
  newInvite: (fields, { parentId, parentName }) => ({
    ...fields,
    entity: "mspInvite",
    mspId: parentId,
    mspName: parentName,
    inviteExpiry: isoOfSeconds(fields.TTL),
  }),
  parentNameOf: (invite) => invite.mspName,
  expiryFields: (ttl) => ({ inviteExpiry: isoOfSeconds(ttl) }),
  describe: {
    email: (name) => `the managed-service provider ${name}`,
    notification: (name) => `the MSP ${name}`,
  },
  memberItem: (invite, userId, now): MspMemberItem => ({
    ...mspKeys.member(invite.mspId, userId),
    entity: "mspMember",
    mspId: invite.mspId,
    userId,
    roles: invite.roles,
    memberCreated: now,
    memberUpdated: now,
  }),
  joinSteps: (invite, userId, now) => [
    {
      step: {
        name: "addMspToUser",
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
      refusal: () => conflict(INVITE_CHANGED),
    },
  ],
});

/** POST /api/msps/{mspId}/invites {userEmail, roles}. */
export async function createMspInvite(access: MspAccess, input: { userEmail: string; roles?: string[] }) {
  const roles = requireGrantableRoles(input.roles, access);
  const invite = await mspInvites.create(access.mspId, access.userId, input.userEmail.toLowerCase(), roles);
  return toApiMspInvite(invite);
}

export async function listMspInvites(access: MspAccess, page: PageRequest) {
  const { items, pagination } = paginate(await mspInvites.listPendingOf(access.mspId), page);
  return { invites: items.map(toApiMspInvite), pagination };
}

/** PUT /api/msps/{mspId}/invites/{inviteId} {roles}: roles replaced, expiry extended by 14 days. */
export async function updateMspInvite(access: MspAccess, inviteId: string, input: { roles?: string[] }) {
  const roles = requireGrantableRoles(input.roles, access);
  const invite = await mspInvites.get(access.mspId, inviteId);
  const ttl = extendedExpiry(invite.TTL, nowSeconds());
  return toApiMspInvite(await mspInvites.renew(invite, roles, ttl, "unchanged"));
}

export async function cancelMspInvite(access: MspAccess, inviteId: string): Promise<void> {
  await mspInvites.cancel(access.mspId, inviteId);
}

// ---------------------------------------------------------------- invites (the invitee's side)

export function listMspInvitesAddressedTo(userId: string): Promise<MspInviteItem[]> {
  return mspInvites.listAddressedTo(userId);
}

/** An MSP invite addressed to this user, or undefined (someone else's is not theirs to see). */
export function findMspInviteForInvitee(userId: string, inviteId: string) {
  return mspInvites.findAddressedTo(userId, inviteId);
}

/** Accept: the invite and its lock go, the member is written, the user lists the MSP; one transaction. */
export async function acceptMspInvite(userId: string, invite: MspInviteItem) {
  await mspInvites.accept(userId, invite);
  return { mspId: invite.mspId, roles: [...invite.roles] };
}

export async function rejectMspInvite(invite: MspInviteItem): Promise<void> {
  await mspInvites.decline(invite);
}
