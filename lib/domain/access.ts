/**
 * Access: the proof that a caller may act on an organisation (ClientAccess) or an MSP (MspAccess)
 * with at least a role, established once per operation (lib/api/dispatch.ts) before the domain
 * runs. Domain functions take these instead of a user id, so none of them can run without the
 * check, and none repeats it.
 *
 * MSP staff reach the clients their MSP manages through the Core API as the client role their
 * highest MSP role acts as (MSP_ACTS_AS), on the resource kinds the client's configuration shares
 * with the MSP (`sharing`, spec 2.14); docs/msp-api.md.
 */
import { findClientConfig } from "#lib/db/entities/client-config.ts";
import { findMember } from "#lib/db/entities/member.ts";
import { findMsp, findMspClientLink, findMspMember } from "#lib/db/entities/msp.ts";
import { DomainError } from "#lib/shared/errors.ts";
import {
  type ClientRole,
  hasMspRole,
  hasRole,
  highestMspRole,
  MSP_ACTS_AS,
  type MspRole,
  normaliseMspRoles,
} from "#lib/shared/roles.ts";
import { CLIENT_NOT_FOUND } from "./clients.ts";
import { MSP_NOT_FOUND } from "./msps.ts";

export interface ClientAccess {
  clientId: string;
  userId: string;
  roles: string[];
  /** Set when the caller is not a member but staff of the MSP that manages the client. */
  via?: { mspId: string; mspRoles: MspRole[] };
}

export interface MspAccess {
  mspId: string;
  userId: string;
  /** The caller's MSP roles; a system administrator who is not a member acts as msp_owner. */
  roles: MspRole[];
  systemAdmin: boolean;
  /** The managed client the path names (its link to this MSP was checked). */
  clientId?: string;
}

export const FORBIDDEN = "Forbidden";

/** The resource kinds of a client that its `sharing` flags open to MSP staff, by path segment. */
export type SharedKind = "credentials" | "targets" | "proxies";

/** The shared kind an operation path acts on: `/api/clients/{clientId}/<kind>...`, else none. */
export function sharedKindOf(path: string): SharedKind | undefined {
  const match = /^\/api\/clients\/\{clientId\}\/(credentials|targets|proxies)(\/|$)/.exec(path);
  return match?.[1] as SharedKind | undefined;
}

/**
 * Whether a client's sharing flags open a kind to its MSP. A credential route cannot tell a proxy
 * credential from a target credential before it reads one, so it needs both flags.
 */
export function isShared(
  sharing: { proxyCredentials: boolean; targetCredentials: boolean; targets: boolean; proxies: boolean },
  kind: SharedKind,
): boolean {
  if (kind === "credentials") return sharing.proxyCredentials && sharing.targetCredentials;
  return sharing[kind];
}

/**
 * The caller's access to the organisation, if they hold at least `minimum`. A member is judged by
 * their roles. A non-member who is staff of the client's MSP acts as MSP_ACTS_AS of their highest
 * MSP role, on what the client shares (`kind`). Anyone else gets 404 (the organisation's existence
 * is not revealed); a caller without the role gets 403.
 */
export async function requireClientAccess(
  clientId: string,
  userId: string,
  minimum: ClientRole,
  kind?: SharedKind,
): Promise<ClientAccess> {
  const member = await findMember(clientId, userId);
  if (member) {
    const roles: string[] = [...member.roles];
    if (!hasRole(roles, minimum))
      throw new DomainError("forbidden", `Forbidden: requires the ${minimum} role`);
    return { clientId, userId, roles };
  }
  const config = await findClientConfig(clientId);
  const staff = config?.mspId ? await findMspMember(config.mspId, userId) : undefined;
  const highest = staff && highestMspRole(staff.roles);
  if (!config?.mspId || !staff || !highest) throw new DomainError("notFound", CLIENT_NOT_FOUND);
  if (kind && !isShared(config.sharing, kind))
    throw new DomainError("forbidden", `Forbidden: the client does not share its ${kind} with its MSP`);
  const actsAs = MSP_ACTS_AS[highest];
  if (!hasRole([actsAs], minimum))
    throw new DomainError("forbidden", `Forbidden: requires the ${minimum} role`);
  return {
    clientId,
    userId,
    roles: [actsAs],
    via: { mspId: config.mspId, mspRoles: normaliseMspRoles(staff.roles) },
  };
}

/**
 * The caller's access to an MSP, if they hold at least `minimum`: a member by their MSP roles, a
 * system administrator as msp_owner. Not a member (or no such MSP): 404 `MSP not found`; without
 * the role: 403 `Forbidden`. With a `clientId`, the client must be linked to this MSP, else 404
 * `Client not found` (also for a client of another MSP).
 */
export async function requireMspAccess(
  mspId: string,
  principal: { userId: string; systemAdmin: boolean },
  minimum: MspRole,
  clientId?: string,
): Promise<MspAccess> {
  const [member, msp, link] = await Promise.all([
    findMspMember(mspId, principal.userId),
    principal.systemAdmin ? findMsp(mspId) : undefined,
    clientId === undefined ? undefined : findMspClientLink(mspId, clientId),
  ]);
  let roles: MspRole[];
  if (member) roles = normaliseMspRoles(member.roles);
  else if (principal.systemAdmin && msp) roles = ["msp_owner"];
  else throw new DomainError("notFound", MSP_NOT_FOUND);
  if (!hasMspRole(roles, minimum)) throw new DomainError("forbidden", FORBIDDEN);
  if (clientId !== undefined && !link) throw new DomainError("notFound", CLIENT_NOT_FOUND);
  return {
    mspId,
    userId: principal.userId,
    roles,
    systemAdmin: principal.systemAdmin,
    ...(clientId === undefined ? {} : { clientId }),
  };
}
