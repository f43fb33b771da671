/**
 * Members and memberships (spec 4.2). Every change to roles or membership is one transaction that
 * updates the member item, the client's admin/owner/member counts and the user's `userClients`,
 * conditioned on the values the decision was made from; on a concurrent change it re-reads and
 * decides again.
 */

import { type ClientItem, clientKeys } from "#lib/db/entities/client.ts";
import { findMember, type MemberItem, memberKeys } from "#lib/db/entities/member.ts";
import { keys } from "#lib/db/keys.ts";
import { type PageRequest, paginate } from "#lib/db/pagination.ts";
import { batchGet, commitSteps, type Item, nowIso, type TransactionStep, tableName } from "#lib/db/store.ts";
import { conflict, forbidden, notFound } from "#lib/shared/errors.ts";
import { hasRole } from "#lib/shared/roles.ts";
import type { ClientAccess } from "./access.ts";
import { CLIENT_NOT_FOUND, getClientItem, listMemberItems, type MemberRef, memberRef } from "./clients.ts";
import { MEMBER_MANAGER_ROLE, planMemberRemoval, planRoleChange, type RoleCounts } from "./member-rules.ts";

export const MEMBER_NOT_FOUND = "Member not found";
const MAX_ATTEMPTS = 4;
const CONCURRENT_CHANGE = "The membership changed concurrently; retry";

export function toApiMember(member: MemberRef, user: Item | undefined) {
  return {
    userId: member.userId,
    roles: member.roles,
    userEmail: user?.userEmail ?? "",
    userFirstName: user?.userFirstName ?? "",
    userLastName: user?.userLastName ?? "",
    userPhone: user?.userPhone ?? "",
    userCreated: user?.userCreated,
    userUpdated: user?.userUpdated,
  };
}

async function withUsers(members: MemberRef[]) {
  const users = await batchGet(members.map((m) => keys.user(m.userId)));
  const byId = new Map(users.map((u) => [String(u.userId), u]));
  return members.map((m) => toApiMember(m, byId.get(m.userId)));
}

/** One member with its user's name and e-mail. */
async function withUser(member: MemberRef) {
  const [user] = await batchGet([keys.user(member.userId)]);
  return toApiMember(member, user);
}

const countsOf = (client: ClientItem): RoleCounts => ({
  adminCount: client.adminCount,
  ownerCount: client.ownerCount,
});

/** The steps of the membership transactions, named so that a cancellation is read by name. */
const ACTOR_STILL_HOLDS = "actorStillHolds";
const SET_MEMBER_ROLES = "setMemberRoles";
const COUNT_ROLES = "countRoles";
const DELETE_MEMBER = "deleteMember";
const UNCOUNT_MEMBER = "uncountMember";
const REMOVE_CLIENT_FROM_USER = "removeClientFromUser";
/** Every step is conditioned on the state the decision was made from: any of them failing is a concurrent change. */
const DECIDED_FROM: readonly string[] = [
  ACTOR_STILL_HOLDS,
  SET_MEMBER_ROLES,
  COUNT_ROLES,
  DELETE_MEMBER,
  UNCOUNT_MEMBER,
  REMOVE_CLIENT_FROM_USER,
];

/**
 * Commit steps decided from state read at `attempt`: a concurrent change to the same client or
 * member answers "again" (decide again from fresh state) until the attempts are spent (409).
 */
function commitDecided(steps: readonly TransactionStep[], attempt: number) {
  return commitSteps(steps, {
    cancelled: ({ failed, conflict: concurrent }) => {
      if (!concurrent && !failed.some((name) => DECIDED_FROM.includes(name))) return undefined;
      return attempt < MAX_ATTEMPTS ? ("again" as const) : conflict(CONCURRENT_CHANGE);
    },
  });
}

export async function listMembers(access: ClientAccess, page: PageRequest) {
  const { items, pagination } = paginate((await listMemberItems(access.clientId)).map(memberRef), page);
  return { members: await withUsers(items), pagination };
}

export async function getMember(access: ClientAccess, userId: string) {
  const member = await findMember(access.clientId, userId);
  if (!member) throw notFound(MEMBER_NOT_FOUND);
  return withUser(memberRef(member));
}

/** The actor's roles read afresh, still enough to manage members (a retry decides again). */
async function currentManagerRoles(clientId: string, actorUserId: string): Promise<string[]> {
  const item = await findMember(clientId, actorUserId);
  if (!item) throw notFound(CLIENT_NOT_FOUND);
  const { roles } = memberRef(item);
  if (!hasRole(roles, MEMBER_MANAGER_ROLE))
    throw forbidden(`Forbidden: requires the ${MEMBER_MANAGER_ROLE} role`);
  return roles;
}

export async function updateMemberRoles(access: ClientAccess, userId: string, roles: string[]) {
  const { clientId, userId: callerId } = access;
  for (let attempt = 1; ; attempt++) {
    // The actor's authority was checked before the first attempt (the operation's access); it is
    // decided afresh on every retry and re-checked in the transaction: an admin demoted while this
    // change is in flight must not complete it.
    const actor = { roles: attempt === 1 ? access.roles : await currentManagerRoles(clientId, callerId) };
    const [client, member] = await Promise.all([getClientItem(clientId), findMember(clientId, userId)]);
    if (!client) throw notFound(CLIENT_NOT_FOUND);
    if (!member) throw notFound(MEMBER_NOT_FOUND);
    const counts = countsOf(client);
    const current = memberRef(member);
    const plan = planRoleChange({
      currentRoles: current.roles,
      requestedRoles: roles,
      actorRoles: actor.roles,
      counts,
    });
    if (plan.changed) {
      const now = nowIso();
      const steps: TransactionStep[] = [
        ...actorStillHolds(clientId, callerId, userId, actor.roles),
        {
          name: SET_MEMBER_ROLES,
          action: {
            Update: {
              TableName: tableName(),
              Key: memberKeys.item(clientId, userId),
              UpdateExpression: "SET #roles = :roles, memberUpdated = :now",
              ConditionExpression: "#roles = :old",
              ExpressionAttributeNames: { "#roles": "roles" },
              ExpressionAttributeValues: { ":roles": plan.roles, ":old": member.roles, ":now": now },
            },
          },
        },
        {
          name: COUNT_ROLES,
          action: {
            Update: {
              TableName: tableName(),
              Key: clientKeys.item(clientId),
              UpdateExpression: "ADD adminCount :ad, ownerCount :od SET clientUpdated = :now",
              ConditionExpression: "adminCount = :ac AND ownerCount = :oc",
              ExpressionAttributeValues: {
                ":ad": plan.adminDelta,
                ":od": plan.ownerDelta,
                ":ac": counts.adminCount,
                ":oc": counts.ownerCount,
                ":now": now,
              },
            },
          },
        },
      ];
      if (await commitDecided(steps, attempt)) continue;
    }
    const updated = await withUser({ userId, roles: plan.roles });
    const message = plan.notices.length > 0 ? `Member updated. ${plan.notices.join(". ")}` : "Member updated";
    return { member: updated, message, notices: plan.notices };
  }
}

/**
 * Remove a member of the organisation the access was granted on: an admin removing someone, or any
 * member leaving (the membership rules decide which; lib/domain/member-rules.ts).
 */
export function removeMember(access: ClientAccess, userId: string): Promise<void> {
  return removeMembership(access.clientId, access.userId, userId);
}

/** The user leaves one of their organisations (DELETE /api/users/{userId}/memberships/{clientId}). */
export function leaveClient(userId: string, clientId: string): Promise<void> {
  return removeMembership(clientId, userId, userId);
}

/** The actor's roles are read on every attempt: a concurrent demotion is decided again. */
async function removeMembership(clientId: string, callerId: string, userId: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const [caller, client, member] = await Promise.all([
      findMember(clientId, callerId),
      getClientItem(clientId),
      findMember(clientId, userId),
    ]);
    if (!caller) throw notFound(CLIENT_NOT_FOUND);
    if (!client) throw notFound(CLIENT_NOT_FOUND);
    if (!member) throw notFound(MEMBER_NOT_FOUND);
    const counts = countsOf(client);
    const target = memberRef(member);
    const plan = planMemberRemoval({
      actorUserId: callerId,
      actorRoles: memberRef(caller).roles,
      targetUserId: userId,
      targetRoles: target.roles,
      counts,
    });
    const steps = membershipRemovalSteps(clientId, userId, member, counts, plan, {
      actorUserId: callerId,
      actorRoles: memberRef(caller).roles,
    });
    if (!(await commitDecided(steps, attempt))) return;
  }
}

/**
 * The steps of ending a membership (one transaction), each conditioned on the state the removal
 * was decided from; also used when a user account is deleted (lib/domain/account-deletion.ts).
 */
export function membershipRemovalSteps(
  clientId: string,
  userId: string,
  member: Pick<MemberItem, "roles">,
  counts: RoleCounts,
  plan: { adminDelta: number; ownerDelta: number },
  actor?: { actorUserId: string; actorRoles: string[] },
): TransactionStep[] {
  const now = nowIso();
  return [
    ...(actor ? actorStillHolds(clientId, actor.actorUserId, userId, actor.actorRoles) : []),
    {
      name: DELETE_MEMBER,
      action: {
        Delete: {
          TableName: tableName(),
          Key: memberKeys.item(clientId, userId),
          ConditionExpression: "#roles = :roles",
          ExpressionAttributeNames: { "#roles": "roles" },
          ExpressionAttributeValues: { ":roles": member.roles },
        },
      },
    },
    {
      name: UNCOUNT_MEMBER,
      action: {
        Update: {
          TableName: tableName(),
          Key: clientKeys.item(clientId),
          UpdateExpression:
            "ADD memberCount :minusOne, adminCount :ad, ownerCount :od SET clientUpdated = :now",
          ConditionExpression: "adminCount = :ac AND ownerCount = :oc",
          ExpressionAttributeValues: {
            ":minusOne": -1,
            ":ad": plan.adminDelta,
            ":od": plan.ownerDelta,
            ":ac": counts.adminCount,
            ":oc": counts.ownerCount,
            ":now": now,
          },
        },
      },
    },
    {
      name: REMOVE_CLIENT_FROM_USER,
      action: {
        Update: {
          TableName: tableName(),
          Key: keys.user(userId),
          UpdateExpression: "DELETE userClients :client SET userUpdated = :now",
          ConditionExpression: "attribute_exists(pKey)",
          ExpressionAttributeValues: { ":client": new Set([clientId]), ":now": now },
        },
      },
    },
  ];
}

/**
 * A ConditionCheck that the acting member still holds the roles the decision was made with (none
 * when acting on oneself: the target's own condition covers it). A concurrent demotion or removal
 * of the actor cancels the transaction, and the retry decides again from fresh state.
 */
function actorStillHolds(
  clientId: string,
  actorUserId: string,
  targetUserId: string,
  roles: string[],
): TransactionStep[] {
  if (actorUserId === targetUserId) return [];
  return [
    {
      name: ACTOR_STILL_HOLDS,
      action: {
        ConditionCheck: {
          TableName: tableName(),
          Key: memberKeys.item(clientId, actorUserId),
          ConditionExpression: "#roles = :actorRoles",
          ExpressionAttributeNames: { "#roles": "roles" },
          ExpressionAttributeValues: { ":actorRoles": roles },
        },
      },
    },
  ];
}
