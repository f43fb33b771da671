/**
 * Client roles and what each may do (spec 2.2, extended for the MSP API by issue 8; the full
 * permission matrix is in docs/roles.md, generated from the operation registry).
 *
 * Roles are ranked: each holds every permission of the roles below it.
 * - `reader`: reads the organisation's resources, logs and notifications; changes nothing.
 * - `user`: also uses resources (credential and token tests).
 * - `devops`: also manages resources: credentials, targets, proxies, rules, meters (and, later,
 *   transforms).
 * - `admin`: also manages the organisation's people: members and invites.
 * - `owner`: also billing and deleting the organisation.
 */
export const CLIENT_ROLES = ["owner", "admin", "devops", "user", "reader"] as const;
export type ClientRole = (typeof CLIENT_ROLES)[number];

/** MSP roles, lowest first (spec 4.14: msp_reader < msp_user < msp_admin < msp_owner). */
export const MSP_ROLES = ["msp_reader", "msp_user", "msp_admin", "msp_owner"] as const;
export type MspRole = (typeof MSP_ROLES)[number];

export type ClientAction = "view" | "use" | "manage" | "invite" | "billing" | "delete";

/** Higher is more. */
export const ROLE_RANK: Readonly<Record<ClientRole, number>> = {
  reader: 1,
  user: 2,
  devops: 3,
  admin: 4,
  owner: 5,
};

/** The least role that may take each action. */
export const ACTION_MINIMUM_ROLE: Readonly<Record<ClientAction, ClientRole>> = {
  view: "reader",
  use: "user",
  manage: "devops",
  invite: "admin",
  billing: "owner",
  delete: "owner",
};

const isClientRole = (role: string): role is ClientRole => Object.hasOwn(ROLE_RANK, role);

/** The highest rank among the roles held (0 for none, or only unknown names). */
export function highestRank(roles: readonly string[]): number {
  // Own keys only: "constructor" or "__proto__" must not reach the object prototype.
  return Math.max(0, ...roles.filter(isClientRole).map((role) => ROLE_RANK[role]));
}

/** True when the roles include `minimum` or a role above it. */
export const hasRole = (roles: readonly string[], minimum: ClientRole): boolean =>
  highestRank(roles) >= ROLE_RANK[minimum];

export function can(roles: readonly string[], action: ClientAction): boolean {
  return hasRole(roles, ACTION_MINIMUM_ROLE[action]);
}

/** The role a caller lacks for an action, named in the 403 message. */
export function minimumRoleFor(action: ClientAction): ClientRole {
  return ACTION_MINIMUM_ROLE[action];
}

/** De-duplicated, in canonical order (owner, admin, devops, user, reader). */
export function normaliseRoles(roles: readonly string[]): ClientRole[] {
  return CLIENT_ROLES.filter((role) => roles.includes(role));
}

/** Holds administrative control of the client (the admin or owner role). */
export const isAdministrator = (roles: readonly string[]) =>
  roles.includes("admin") || roles.includes("owner");

/** Higher is more (spec 4.14: msp_reader < msp_user < msp_admin < msp_owner). */
export const MSP_ROLE_RANK: Readonly<Record<MspRole, number>> = {
  msp_reader: 1,
  msp_user: 2,
  msp_admin: 3,
  msp_owner: 4,
};

const isMspRole = (role: string): role is MspRole => Object.hasOwn(MSP_ROLE_RANK, role);

/** The highest MSP role held, or undefined for none. */
export function highestMspRole(roles: readonly string[]): MspRole | undefined {
  const held = roles.filter(isMspRole);
  if (held.length === 0) return undefined;
  return held.reduce((best, role) => (MSP_ROLE_RANK[role] > MSP_ROLE_RANK[best] ? role : best));
}

/** True when the roles include `minimum` or an MSP role above it. */
export const hasMspRole = (roles: readonly string[], minimum: MspRole): boolean => {
  const highest = highestMspRole(roles);
  return highest !== undefined && MSP_ROLE_RANK[highest] >= MSP_ROLE_RANK[minimum];
};

/** De-duplicated, highest first (msp_owner, msp_admin, msp_user, msp_reader). */
export function normaliseMspRoles(roles: readonly string[]): MspRole[] {
  return [...MSP_ROLES].reverse().filter((role) => roles.includes(role));
}

/**
 * The client role MSP staff act as on a client their MSP manages, through the Core API
 * (docs/msp-api.md). Never above devops: a managed client's people are managed through the MSP
 * path (with its own rules), and billing and deletion stay with the client's own owner.
 */
export const MSP_ACTS_AS: Readonly<Record<MspRole, ClientRole>> = {
  msp_reader: "reader",
  msp_user: "user",
  msp_admin: "devops",
  msp_owner: "devops",
};
