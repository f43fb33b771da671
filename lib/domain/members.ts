/**
 * Members and memberships (spec 4.2). Every change to roles or membership is one transaction that
 * updates the member item, the client's admin/owner/member counts and the user's `userClients`,
 * conditioned on the values the decision was made from; on a concurrent change it re-reads and
 * decides again.
 */
import { TransactWriteCommand } from "../db/document-client.ts";
import { keys } from "../db/keys.ts";
import { batchGet, homeDb, type Item, nowIso, tableName, transactionCancellationCodes } from "../db/store.ts";
import { type PageRequest, paginate } from "../http/pagination.ts";
import type { ClientAccess } from "./access.ts";
import {
  CLIENT_NOT_FOUND,
  getClientItem,
  getMemberItem,
  listMemberItems,
  type MemberRef,
  memberRef,
} from "./clients.ts";
import { conflict, forbidden, notFound } from "./errors.ts";
import { MEMBER_MANAGER_ROLE, planMemberRemoval, planRoleChange, type RoleCounts } from "./member-rules.ts";
import { hasRole } from "./roles.ts";

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

const countsOf = (client: Item): RoleCounts => ({
  adminCount: Number(client.adminCount ?? 0),
  ownerCount: Number(client.ownerCount ?? 0),
});

/** A concurrent change to the same client or member: decide again from fresh state. */
function isRetryableConflict(error: unknown): boolean {
  return (
    transactionCancellationCodes(error)?.some(
      (c) => c === "ConditionalCheckFailed" || c === "TransactionConflict",
    ) ?? false
  );
}

export async function listMembers(access: ClientAccess, page: PageRequest) {
  const { items, pagination } = paginate((await listMemberItems(access.clientId)).map(memberRef), page);
  return { members: await withUsers(items), pagination };
}

export async function getMember(access: ClientAccess, userId: string) {
  const member = await getMemberItem(access.clientId, userId);
  if (!member) throw notFound(MEMBER_NOT_FOUND);
  return (await withUsers([memberRef(member)]))[0]!;
}

/** The actor's roles read afresh, still enough to manage members (a retry decides again). */
async function currentManagerRoles(clientId: string, actorUserId: string): Promise<string[]> {
  const item = await getMemberItem(clientId, actorUserId);
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
    const [client, member] = await Promise.all([getClientItem(clientId), getMemberItem(clientId, userId)]);
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
      try {
        await homeDb().send(
          new TransactWriteCommand({
            TransactItems: [
              ...actorStillHolds(clientId, callerId, userId, actor.roles),
              {
                Update: {
                  TableName: tableName(),
                  Key: keys.member(clientId, userId),
                  UpdateExpression: "SET #roles = :roles, memberUpdated = :now",
                  ConditionExpression: "#roles = :old",
                  ExpressionAttributeNames: { "#roles": "roles" },
                  ExpressionAttributeValues: { ":roles": plan.roles, ":old": member.roles, ":now": now },
                },
              },
              {
                Update: {
                  TableName: tableName(),
                  Key: keys.client(clientId),
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
            ],
          }),
        );
      } catch (error) {
        if (isRetryableConflict(error) && attempt < MAX_ATTEMPTS) continue;
        if (isRetryableConflict(error)) throw conflict(CONCURRENT_CHANGE);
        throw error;
      }
    }
    const updated = (await withUsers([{ userId, roles: plan.roles }]))[0]!;
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
      getMemberItem(clientId, callerId),
      getClientItem(clientId),
      getMemberItem(clientId, userId),
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
    try {
      await homeDb().send(
        membershipRemovalTransaction(clientId, userId, member, counts, plan, {
          actorUserId: callerId,
          actorRoles: memberRef(caller).roles,
        }),
      );
      return;
    } catch (error) {
      if (isRetryableConflict(error) && attempt < MAX_ATTEMPTS) continue;
      if (isRetryableConflict(error)) throw conflict(CONCURRENT_CHANGE);
      throw error;
    }
  }
}

/** The one transaction that ends a membership; also used when a user account is deleted. */
export function membershipRemovalTransaction(
  clientId: string,
  userId: string,
  member: Item,
  counts: RoleCounts,
  plan: { adminDelta: number; ownerDelta: number },
  actor?: { actorUserId: string; actorRoles: string[] },
) {
  const now = nowIso();
  return new TransactWriteCommand({
    TransactItems: [
      ...(actor ? actorStillHolds(clientId, actor.actorUserId, userId, actor.actorRoles) : []),
      {
        Delete: {
          TableName: tableName(),
          Key: keys.member(clientId, userId),
          ConditionExpression: "#roles = :roles",
          ExpressionAttributeNames: { "#roles": "roles" },
          ExpressionAttributeValues: { ":roles": member.roles },
        },
      },
      {
        Update: {
          TableName: tableName(),
          Key: keys.client(clientId),
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
      {
        Update: {
          TableName: tableName(),
          Key: keys.user(userId),
          UpdateExpression: "DELETE userClients :client SET userUpdated = :now",
          ConditionExpression: "attribute_exists(pKey)",
          ExpressionAttributeValues: { ":client": new Set([clientId]), ":now": now },
        },
      },
    ],
  });
}

/**
 * A ConditionCheck that the acting member still holds the roles the decision was made with (none
 * when acting on oneself: the target's own condition covers it). A concurrent demotion or removal
 * of the actor cancels the transaction, and the retry decides again from fresh state.
 */
function actorStillHolds(clientId: string, actorUserId: string, targetUserId: string, roles: string[]) {
  if (actorUserId === targetUserId) return [];
  return [
    {
      ConditionCheck: {
        TableName: tableName(),
        Key: keys.member(clientId, actorUserId),
        ConditionExpression: "#roles = :actorRoles",
        ExpressionAttributeNames: { "#roles": "roles" },
        ExpressionAttributeValues: { ":actorRoles": roles },
      },
    },
  ];
}
