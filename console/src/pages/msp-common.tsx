/**
 * What the MSP pages share: their paths, query keys, the MSP's role names, a pager for the MSP API's
 * page/limit lists. (The form state is msp-form.tsx: it brings the schemas, which the switcher,
 * in the first chunk, must not.)
 */

/** The path of an MSP page: mspPath("m1", "clients", "c1") is /msps/m1/clients/c1. */
export const mspPath = (mspId: string, ...segments: string[]) =>
  `/msps/${[mspId, ...segments].map(encodeURIComponent).join("/")}`;

export const mspKeys = {
  clients: (mspId: string) => ["msp", mspId, "clients"] as const,
  client: (mspId: string, clientId: string) => ["msp", mspId, "client", clientId] as const,
  configuration: (mspId: string) => ["msp", mspId, "configuration"] as const,
  members: (mspId: string) => ["msp", mspId, "members"] as const,
  invites: (mspId: string) => ["msp", mspId, "invites"] as const,
  usage: (mspId: string) => ["msp", mspId, "usage"] as const,
};

export const MSP_ROLES = ["msp_owner", "msp_admin", "msp_user", "msp_reader"] as const;
export type MspRole = (typeof MSP_ROLES)[number];

export const MSP_ROLE_NAMES: Record<MspRole, string> = {
  msp_owner: "Owner",
  msp_admin: "Admin",
  msp_user: "User",
  msp_reader: "Reader",
};

export const MSP_ROLES_TEXT =
  "MSP roles, highest first: Owner (the MSP's owners), Admin (clients, their configuration, top-ups, the team and invites), User (reads configuration and usage), Reader (reads the clients and the team). Each role holds the ones below it.";

export const topMspRole = (roles: readonly string[]): MspRole =>
  MSP_ROLES.find((role) => roles.includes(role)) ?? "msp_reader";

export const personName = (person: { userFirstName: string; userLastName: string; userEmail: string }) => {
  const name = `${person.userFirstName} ${person.userLastName}`.trim();
  return name ? `${name} (${person.userEmail})` : person.userEmail;
};

export const usd = (amount: number) =>
  new Intl.NumberFormat("en-US", { style: "currency", currency: "USD" }).format(amount);

export const day = (iso: string) => new Date(iso).toLocaleDateString();
