/**
 * Client roles (spec 2.2) and what each may do. `user`: view and use resources; `admin`: also
 * manage every resource and invite; `owner`: also billing and deleting the organisation.
 */
export const CLIENT_ROLES = ["owner", "admin", "user"] as const;
export type ClientRole = (typeof CLIENT_ROLES)[number];

export type ClientAction = "view" | "use" | "manage" | "invite" | "billing" | "delete";

const GRANTS: Record<ClientRole, readonly ClientAction[]> = {
  user: ["view", "use"],
  admin: ["view", "use", "manage", "invite"],
  owner: ["view", "use", "manage", "invite", "billing", "delete"],
};

export function can(roles: readonly string[], action: ClientAction): boolean {
  // Own keys only: "constructor" or "__proto__" must not reach the object prototype.
  return roles.some((role) => Object.hasOwn(GRANTS, role) && GRANTS[role as ClientRole].includes(action));
}

/** The role a caller lacks for an action, named in the 403 message. */
export function minimumRoleFor(action: ClientAction): ClientRole {
  if (GRANTS.user.includes(action)) return "user";
  if (GRANTS.admin.includes(action)) return "admin";
  return "owner";
}

/** De-duplicated, in canonical order (owner, admin, user). */
export function normaliseRoles(roles: readonly string[]): ClientRole[] {
  return CLIENT_ROLES.filter((role) => roles.includes(role));
}

/** Holds administrative control of the client (the admin or owner role). */
export const isAdministrator = (roles: readonly string[]) =>
  roles.includes("admin") || roles.includes("owner");
