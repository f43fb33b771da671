/**
 * The membership rules of spec 4.2 and 4.1 as pure functions. The store layer applies the plan in
 * a transaction conditioned on the counts these decisions were made from, so two admins demoting
 * each other at the same moment cannot both succeed.
 */
import { badRequest, forbidden } from "#lib/shared/errors.ts";
import {
  ACTION_MINIMUM_ROLE,
  type ClientRole,
  hasRole,
  isAdministrator,
  normaliseRoles,
} from "#lib/shared/roles.ts";

export const LAST_ADMIN_RETAINED = "User retains the admin role as the last remaining admin";
export const OWNER_RETAINED = "The owner role cannot be removed through the API; the user keeps it";
export const LAST_ADMIN_DELETE = "Cannot delete member, last remaining admin";
export const LAST_OWNER_DELETE = "Cannot delete member, last remaining owner";
export const NOT_SOLE_ADMIN = "Cannot delete client, not the sole admin";

/** The least role that changes other members' roles or removes them (the `invite` action: admin). */
export const MEMBER_MANAGER_ROLE: ClientRole = ACTION_MINIMUM_ROLE.invite;

export interface RoleCounts {
  adminCount: number;
  ownerCount: number;
}

export interface RoleChangePlan {
  roles: ClientRole[];
  notices: string[];
  adminDelta: number;
  ownerDelta: number;
  changed: boolean;
}

const delta = (before: readonly string[], after: readonly string[], role: ClientRole) =>
  Number(after.includes(role)) - Number(before.includes(role));

export function planRoleChange(input: {
  currentRoles: readonly string[];
  requestedRoles: readonly string[];
  actorRoles: readonly string[];
  counts: RoleCounts;
}): RoleChangePlan {
  const current = normaliseRoles(input.currentRoles);
  const roles = new Set(normaliseRoles(input.requestedRoles));
  const notices: string[] = [];

  if (roles.has("owner") && !current.includes("owner") && !input.actorRoles.includes("owner")) {
    throw forbidden("Only an owner can grant the owner role");
  }
  if (current.includes("owner") && !roles.has("owner")) {
    roles.add("owner");
    notices.push(OWNER_RETAINED);
  }
  if (current.includes("admin") && !roles.has("admin") && input.counts.adminCount <= 1) {
    roles.add("admin");
    notices.push(LAST_ADMIN_RETAINED);
  }
  const finalRoles = normaliseRoles([...roles]);
  return {
    roles: finalRoles,
    notices,
    adminDelta: delta(current, finalRoles, "admin"),
    ownerDelta: delta(current, finalRoles, "owner"),
    changed: finalRoles.join() !== current.join(),
  };
}

export interface RemovalPlan {
  adminDelta: number;
  ownerDelta: number;
}

export function planMemberRemoval(input: {
  actorUserId: string;
  actorRoles: readonly string[];
  targetUserId: string;
  targetRoles: readonly string[];
  counts: RoleCounts;
}): RemovalPlan {
  const self = input.actorUserId === input.targetUserId;
  // Anyone may leave; removing someone else is managing the organisation's people (admin, not devops).
  if (!self && !hasRole(input.actorRoles, MEMBER_MANAGER_ROLE))
    throw forbidden(`Forbidden: requires the ${MEMBER_MANAGER_ROLE} role`);
  if (input.targetRoles.includes("admin") && input.counts.adminCount <= 1)
    throw badRequest(LAST_ADMIN_DELETE);
  if (input.targetRoles.includes("owner")) {
    if (!self) throw forbidden("Cannot remove an owner; an owner can only leave the client themselves");
    if (input.counts.ownerCount <= 1) throw badRequest(LAST_OWNER_DELETE);
  }
  return {
    adminDelta: input.targetRoles.includes("admin") ? -1 : 0,
    ownerDelta: input.targetRoles.includes("owner") ? -1 : 0,
  };
}

/** Client deletion is reserved to the sole remaining administrator (admin or owner). */
export function checkClientDeletion(input: {
  callerUserId: string;
  members: readonly { userId: string; roles: readonly string[] }[];
}): void {
  const caller = input.members.find((m) => m.userId === input.callerUserId);
  if (!caller || !isAdministrator(caller.roles)) throw forbidden("Forbidden: requires the admin role");
  const otherAdministrators = input.members.filter(
    (m) => m.userId !== input.callerUserId && isAdministrator(m.roles),
  );
  if (otherAdministrators.length > 0) {
    throw forbidden(NOT_SOLE_ADMIN, {
      hint: `Remove yourself with DELETE /api/clients/{clientId}/members/${input.callerUserId} instead`,
    });
  }
}
