/**
 * The MSP team's rules (spec 4.14, 7) as pure decisions: roles are required; only an msp_owner
 * (or a system administrator) grants or takes away msp_owner; the last holder of msp_owner and the
 * last holder of msp_admin keep it. The store applies a plan in a transaction conditioned on the
 * MSP's `memberVersion` the decision was made from.
 */
import { badRequest, forbidden } from "#lib/shared/errors.ts";
import { type MspRole, normaliseMspRoles } from "#lib/shared/roles.ts";

export const ROLES_REQUIRED = "Roles required";
export const LAST_MSP_OWNER = "Cannot remove last msp_owner";
export const LAST_MSP_ADMIN = "Cannot remove last msp_admin";
export const FORBIDDEN = "Forbidden";

export interface MspActor {
  roles: readonly string[];
  systemAdmin: boolean;
}

const mayTouchOwner = (actor: MspActor) => actor.systemAdmin || actor.roles.includes("msp_owner");

/** The roles of an invite or a member update: at least one, and msp_owner only from an owner. */
export function requireGrantableRoles(requested: readonly string[] | undefined, actor: MspActor): MspRole[] {
  const roles = normaliseMspRoles(requested ?? []);
  if (roles.length === 0) throw badRequest(ROLES_REQUIRED);
  if (roles.includes("msp_owner") && !mayTouchOwner(actor)) throw forbidden(FORBIDDEN);
  return roles;
}

const holders = (members: readonly { roles: readonly string[] }[], role: MspRole) =>
  members.filter((member) => member.roles.includes(role)).length;

/** Whether the target losing `lost` roles leaves the MSP without an msp_owner or an msp_admin. */
function checkLastHolders(lost: readonly string[], members: readonly { roles: readonly string[] }[]) {
  if (lost.includes("msp_owner") && holders(members, "msp_owner") <= 1) throw badRequest(LAST_MSP_OWNER);
  if (lost.includes("msp_admin") && holders(members, "msp_admin") <= 1) throw badRequest(LAST_MSP_ADMIN);
}

export function planMspRoleChange(input: {
  actor: MspActor;
  currentRoles: readonly string[];
  requestedRoles: readonly string[] | undefined;
  members: readonly { roles: readonly string[] }[];
}): MspRole[] {
  const roles = requireGrantableRoles(input.requestedRoles, input.actor);
  const lost = input.currentRoles.filter((role) => !roles.includes(role as MspRole));
  if (lost.includes("msp_owner") && !mayTouchOwner(input.actor)) throw forbidden(FORBIDDEN);
  checkLastHolders(lost, input.members);
  return roles;
}

export function planMspMemberRemoval(input: {
  actor: MspActor;
  targetRoles: readonly string[];
  members: readonly { roles: readonly string[] }[];
}): void {
  if (input.targetRoles.includes("msp_owner") && !mayTouchOwner(input.actor)) throw forbidden(FORBIDDEN);
  checkLastHolders(input.targetRoles, input.members);
}
