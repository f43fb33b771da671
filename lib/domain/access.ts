/**
 * Client access: the proof that a caller is a member of an organisation with at least a role,
 * established once per operation (lib/api/dispatch.ts) before the domain runs. Domain functions
 * that act on an organisation take a ClientAccess instead of a user id, so none of them can run
 * without the check, and none repeats it.
 */
import { findMember } from "../db/entities/member.ts";
import { CLIENT_NOT_FOUND } from "./clients.ts";
import { DomainError } from "./errors.ts";
import { type ClientRole, hasRole } from "./roles.ts";

export interface ClientAccess {
  clientId: string;
  userId: string;
  roles: string[];
}

/**
 * The caller's access to the organisation, if they hold at least `minimum`. A non-member gets
 * 404 (the organisation's existence is not revealed); a member without the role gets 403.
 */
export async function requireClientAccess(
  clientId: string,
  userId: string,
  minimum: ClientRole,
): Promise<ClientAccess> {
  const member = await findMember(clientId, userId);
  if (!member) throw new DomainError("notFound", CLIENT_NOT_FOUND);
  const roles: string[] = [...member.roles];
  if (!hasRole(roles, minimum)) throw new DomainError("forbidden", `Forbidden: requires the ${minimum} role`);
  return { clientId, userId, roles };
}
