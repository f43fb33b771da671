/**
 * The MSP API (spec 4.14; docs/msp-api.md): an MSP's managed clients and their members and
 * configuration, its team, its invites and its own configuration. Every operation needs an MSP
 * role (msp_reader < msp_user < msp_admin < msp_owner), checked by the dispatcher with the
 * client's link to the MSP when the path names one.
 */

import { z } from "zod";
import {
  access,
  MessageResponse,
  operation,
  PaginationSchema,
  paged,
  pathParams,
  wrapped,
} from "#lib/api/operation.ts";
import { MSP_BILLING_STATUSES, MSP_BILLING_TYPES } from "#lib/db/entities/msp.ts";
import { PaginationQuery } from "#lib/db/pagination.ts";
import {
  createManagedClient,
  detachManagedClient,
  getManagedClient,
  getManagedClientConfiguration,
  getManagedClientMember,
  listManagedClientMembers,
  listManagedClients,
  removeManagedClientMember,
  setManagedClientMemberRoles,
  updateManagedClient,
  updateManagedClientConfiguration,
} from "#lib/domain/msp-clients.ts";
import {
  cancelMspInvite,
  createMspInvite,
  getMspTeamMember,
  listMspInvites,
  listMspTeam,
  removeMspTeamMember,
  updateMspInvite,
  updateMspTeamMember,
} from "#lib/domain/msp-team.ts";
import { manualTopUp } from "#lib/domain/msp-top-ups.ts";
import { mspUsageReport, usageCsv } from "#lib/domain/msp-usage.ts";
import { getMspConfiguration, updateMspConfiguration } from "#lib/domain/msps.ts";
import { PLAN_STATUSES, PLAN_TIERS } from "#lib/domain/plans.ts";
import {
  CreateMspClientBody,
  CreateMspInviteBody,
  MspConfigurationQuery,
  MspPathClientRolesBody,
  MspRolesBody,
  MspTopUpBody,
  MspUsageQuery,
  UpdateClientConfigurationBody,
  UpdateMspClientBody,
  UpdateMspConfigurationBody,
} from "#lib/http/msp-schemas.ts";
import { CLIENT_ROLES, MSP_ROLES } from "#lib/shared/roles.ts";

const ManagedClientSummary = z.object({
  clientId: z.string(),
  clientName: z.string(),
  clientCreated: z.string(),
  clientUpdated: z.string(),
});

/** One managed client (the spec leaves it open; docs/msp-api.md). */
export const ManagedClientSchema = ManagedClientSummary.extend({
  clientStatus: z.enum(["active", "pendingDeletion"]),
  clientMembers: z.array(z.object({ userId: z.string(), roles: z.array(z.enum(CLIENT_ROLES)) })),
  mspId: z.string(),
  mspLinkedAt: z.string().describe("When the client was linked to the MSP"),
  billingTo: z.enum(["client", "msp"]),
  billingStatus: z.enum(["active", "suspended"]),
  planTier: z.enum(PLAN_TIERS),
  planStatus: z.enum(PLAN_STATUSES),
});

/** A member through the MSP path: no phone (spec 2.2). */
const MspPathMemberSchema = z.object({
  userId: z.string(),
  roles: z.array(z.enum(CLIENT_ROLES)),
  userEmail: z.string(),
  userFirstName: z.string(),
  userLastName: z.string(),
  userCreated: z.string().optional(),
  userUpdated: z.string().optional(),
});

export const MspMemberSchema = MspPathMemberSchema.extend({ roles: z.array(z.enum(MSP_ROLES)) });

export const MspInviteSchema = z.object({
  inviteId: z.string(),
  userEmail: z.string().describe("The invitee's address, lower case"),
  roles: z.array(z.enum(MSP_ROLES)),
  inviteExpiry: z.string().describe("7 days after creation; each PUT with roles adds 14 days"),
  inviteCreated: z.string(),
  inviteUpdated: z.string(),
});

const Rates = z.object({
  apiSeconds: z.number(),
  storageGB: z.number(),
  aiTokens: z.number(),
  plan: z.number(),
});

export const MspConfigurationSchema = z.object({
  configurationType: z.literal("msp"),
  mspId: z.string(),
  billingType: z.enum(MSP_BILLING_TYPES),
  billingStatus: z.enum(MSP_BILLING_STATUSES),
  paymentMethodOnFile: z
    .boolean()
    .describe(
      "Read only: whether an msp_owner put a payment method on file (Checkout in setup mode, POST /api/msps/{mspId}/billing/payment-method); billing a client to the MSP needs one",
    ),
  paymentMethodUpdated: z
    .string()
    .nullable()
    .describe("Read only: when the payment method on file was last added or replaced"),
  promotionalCodes: z
    .array(z.object({ name: z.string(), createdAt: z.string(), expiresAt: z.string() }))
    .nullable(),
  rates: Rates.describe("The fraction of retail the MSP pays (1 = 100%); set by operators only"),
  configCreated: z.string(),
  configUpdated: z.string(),
});

const Sharing = z.object({
  proxyCredentials: z.boolean(),
  targetCredentials: z.boolean(),
  targets: z.boolean(),
  proxies: z.boolean(),
});
const Limits = z.object({ requestsPerMinute: z.number().nullable(), requestsPerDay: z.number().nullable() });
const Budget = z.object({
  current: z.number().describe("Read only"),
  minimumTopUpThreshold: z.number(),
  maximumTopUpThreshold: z.number(),
});

const ConfigurationUpdateSchema = z.object({
  clientId: z.string(),
  billingTo: z.enum(["client", "msp"]),
  billingType: z.enum(MSP_BILLING_TYPES),
  topUpMethod: z.enum(["automatic", "manual"]),
  regionAccess: z.array(z.string()),
  sharing: Sharing,
  limits: Limits,
  budget: Budget,
  rates: Rates,
  configUpdated: z.string(),
});

const nullableText = z.string().nullable();
export const ClientConfigurationSchema = ConfigurationUpdateSchema.extend({
  configurationType: z.literal("client"),
  mspId: z.string().nullable(),
  billingStatus: z.enum(MSP_BILLING_STATUSES),
  planTier: z.enum(PLAN_TIERS),
  planStatus: z.enum(PLAN_STATUSES),
  planPendingTier: nullableText,
  planPendingInvoiceId: nullableText,
  planPendingEffectiveAt: nullableText,
  planExpiresAt: nullableText,
  planRenewedAt: nullableText,
  planBillingAnchor: nullableText,
  planStripeInvoiceId: nullableText,
  featureOverrides: z.array(z.string()),
  promoOverrides: z.array(z.string()),
  configCreated: z.string(),
});

const UsageRowSchema = z.object({
  clientId: z.string(),
  clientName: z.string(),
  billingTo: z.enum(["client", "msp"]),
  requests: z.number().int().describe("Requests the data plane answered for the client in the month"),
  apiSeconds: z.number().describe("Sum of the requests' durations (received to answered), seconds, 3 places"),
  clientRate: z.number().describe("The client's rates.apiSeconds (fraction of retail) now"),
  amountAtClientRates: z.number().describe("apiSeconds × retail price × clientRate, USD, exact to 9 places"),
  mspRate: z.number().describe("The MSP's rates.apiSeconds now"),
  amountAtMspRates: z.number().describe("apiSeconds × retail price × mspRate, USD, exact to 9 places"),
});

export const UsageReportSchema = z.object({
  message: z.string(),
  month: z.string(),
  currency: z.string(),
  usage: z.array(UsageRowSchema),
  totals: z
    .object({
      requests: z.number().int(),
      apiSeconds: z.number(),
      amountAtClientRates: z.number(),
      amountAtMspRates: z.number(),
    })
    .describe("Over every managed client, not only this page"),
  pagination: PaginationSchema,
});

const TopUpSchema = z.object({
  topUpId: z.number().int().describe("The top-up's sequence number for this client"),
  method: z.enum(["automatic", "manual"]),
  amount: z.number(),
  currency: z.string(),
  status: z.enum(["pending", "succeeded", "failed"]),
  paymentIntentId: z.string().nullable(),
  createdAt: z.string(),
});

const MspParams = pathParams("mspId");
const MspClientParams = pathParams("mspId", "clientId");
const MspClientMemberParams = pathParams("mspId", "clientId", "userId");
const MspMemberParams = pathParams("mspId", "userId");
const MspInviteParams = pathParams("mspId", "inviteId");

const CLIENTS = "/api/msps/{mspId}/clients";
const CLIENT = `${CLIENTS}/{clientId}`;

export const mspOperations = [
  // ---- managed clients
  operation({
    id: "listMspClients",
    method: "GET",
    path: CLIENTS,
    group: "msps",
    summary: "List the MSP's managed clients",
    description:
      "Lists the clients the MSP manages, a page at a time (query `page`, default 1, and `limit`, default 20, at most 100).",
    access: access.msp("msp_reader"),
    effect: "read",
    params: MspParams,
    query: PaginationQuery,
    response: { status: 200, schema: paged("clients", ManagedClientSummary) },
    errors: [403, 404],
    handler: async ({ msp, query }) => ({
      body: { message: "Clients retrieved", ...(await listManagedClients(msp, query)) },
    }),
  }),
  operation({
    id: "createMspClient",
    method: "POST",
    path: CLIENTS,
    group: "msps",
    summary: "Create a managed client",
    description:
      "Creates a client linked to the MSP, with no members, the default configuration of spec 2.14, `billingTo` `msp` and every `sharing` flag on; provisions its customer record with the payment processor. Answers `client`.",
    access: access.msp("msp_admin"),
    effect: "write",
    params: MspParams,
    body: CreateMspClientBody,
    response: {
      status: 201,
      schema: z.object({ message: z.string(), client: ManagedClientSummary }),
    },
    errors: [403, 404],
    handler: async ({ msp, body }) => ({
      status: 201,
      body: { message: "Client created", client: await createManagedClient(msp, body.clientName) },
    }),
  }),
  operation({
    id: "getMspClient",
    method: "GET",
    path: CLIENT,
    group: "msps",
    summary: "Get a managed client",
    description:
      "Answers one managed client as a one-element `clients` array: its name, status, members and their roles, when it was linked, who it is billed to and its plan. 404 `Client not found` for a client this MSP does not manage.",
    access: access.msp("msp_reader"),
    effect: "read",
    params: MspClientParams,
    response: { status: 200, schema: wrapped("clients", ManagedClientSchema) },
    errors: [403, 404],
    handler: async ({ msp }) => ({
      body: { message: "Client retrieved", clients: [await getManagedClient(msp)] },
    }),
  }),
  operation({
    id: "updateMspClient",
    method: "PUT",
    path: CLIENT,
    group: "msps",
    summary: "Rename a managed client",
    description: "`clientName` (optional) renames the client. Answers `client`.",
    access: access.msp("msp_admin"),
    effect: "write",
    params: MspClientParams,
    body: UpdateMspClientBody,
    response: {
      status: 200,
      schema: z.object({
        message: z.string(),
        client: z.object({ clientId: z.string(), clientName: z.string(), clientUpdated: z.string() }),
      }),
    },
    errors: [403, 404],
    handler: async ({ msp, body }) => ({
      body: { message: "Client updated", client: await updateManagedClient(msp, body) },
    }),
  }),
  operation({
    id: "detachMspClient",
    method: "DELETE",
    path: CLIENT,
    group: "msps",
    summary: "Detach a managed client",
    description:
      "Ends the MSP's management of the client; the client keeps everything and is neither deleted nor deprovisioned. 409 `Cannot detach client, no independent owner` unless an owner member who is not staff of this MSP exists, and 409 `Cannot detach client, billing is charged to the MSP` while `billingTo` is `msp`.",
    access: access.msp("msp_admin"),
    effect: "delete",
    params: MspClientParams,
    response: { status: 200, schema: MessageResponse },
    errors: [403, 404, 409],
    handler: async ({ msp }) => {
      await detachManagedClient(msp);
      return { body: { message: "Client detached" } };
    },
  }),

  // ---- members of a managed client
  operation({
    id: "listMspClientMembers",
    method: "GET",
    path: `${CLIENT}/members`,
    group: "msps",
    summary: "List a managed client's members",
    description:
      "Lists the client's members with their roles and contact fields (no phone), a page at a time.",
    access: access.msp("msp_reader"),
    effect: "read",
    params: MspClientParams,
    query: PaginationQuery,
    response: { status: 200, schema: paged("members", MspPathMemberSchema) },
    errors: [403, 404],
    handler: async ({ msp, query }) => ({
      body: { message: "Members retrieved", ...(await listManagedClientMembers(msp, query)) },
    }),
  }),
  operation({
    id: "getMspClientMember",
    method: "GET",
    path: `${CLIENT}/members/{userId}`,
    group: "msps",
    summary: "Get a managed client's member",
    description:
      "Answers one member of the client as a one-element `members` array (404 `Member not found`).",
    access: access.msp("msp_reader"),
    effect: "read",
    params: MspClientMemberParams,
    response: { status: 200, schema: wrapped("members", MspPathMemberSchema) },
    errors: [403, 404],
    handler: async ({ msp, params }) => ({
      body: { message: "Member retrieved", members: [await getManagedClientMember(msp, params.userId)] },
    }),
  }),
  operation({
    id: "updateMspClientMember",
    method: "PUT",
    path: `${CLIENT}/members/{userId}`,
    group: "msps",
    summary: "Set a managed client member's roles",
    description:
      "Replaces the member's roles: admin, devops, user, reader, and `owner`, which only a system administrator assigns or removes (403 otherwise). Without roles: 400 `Roles required`; an unknown role is a 400 naming the field. A user who is not a member yet is added when they are staff of this MSP or the caller is a system administrator (404 `Member not found` otherwise; invite them instead).",
    access: access.msp("msp_admin"),
    effect: "write",
    params: MspClientMemberParams,
    body: MspPathClientRolesBody,
    response: { status: 200, schema: wrapped("members", MspPathMemberSchema) },
    errors: [403, 404, 409],
    handler: async ({ msp, params, body }) => ({
      body: {
        message: "Member updated",
        members: [await setManagedClientMemberRoles(msp, params.userId, body.roles)],
      },
    }),
  }),
  operation({
    id: "removeMspClientMember",
    method: "DELETE",
    path: `${CLIENT}/members/{userId}`,
    group: "msps",
    summary: "Remove a managed client's member",
    description:
      "Removes the member from the client (and the client from the user's `userClients`). An owner cannot be removed through the MSP path (403).",
    access: access.msp("msp_admin"),
    effect: "delete",
    params: MspClientMemberParams,
    response: { status: 200, schema: MessageResponse },
    errors: [403, 404, 409],
    handler: async ({ msp, params }) => {
      await removeManagedClientMember(msp, params.userId);
      return { body: { message: "Member removed" } };
    },
  }),

  // ---- the MSP's team
  operation({
    id: "listMspMembers",
    method: "GET",
    path: "/api/msps/{mspId}/members",
    group: "msps",
    summary: "List the MSP's members",
    description:
      "Lists the MSP's members with their MSP roles and contact fields (no phone), a page at a time.",
    access: access.msp("msp_reader"),
    effect: "read",
    params: MspParams,
    query: PaginationQuery,
    response: { status: 200, schema: paged("members", MspMemberSchema) },
    errors: [403, 404],
    handler: async ({ msp, query }) => ({
      body: { message: "Members retrieved", ...(await listMspTeam(msp, query)) },
    }),
  }),
  operation({
    id: "getMspMember",
    method: "GET",
    path: "/api/msps/{mspId}/members/{userId}",
    group: "msps",
    summary: "Get an MSP member",
    description:
      "Answers one member of the MSP, in the list's shape, as a one-element `members` array (404 `Member not found in MSP`).",
    access: access.msp("msp_reader"),
    effect: "read",
    params: MspMemberParams,
    response: { status: 200, schema: wrapped("members", MspMemberSchema) },
    errors: [403, 404],
    handler: async ({ msp, params }) => ({
      body: { message: "Member retrieved", members: [await getMspTeamMember(msp, params.userId)] },
    }),
  }),
  operation({
    id: "updateMspMember",
    method: "PUT",
    path: "/api/msps/{mspId}/members/{userId}",
    group: "msps",
    summary: "Change an MSP member's roles",
    description:
      "Replaces the member's MSP roles (msp_owner, msp_admin, msp_user, msp_reader). Without roles: 400 `Roles required`. Only an msp_owner grants or takes away msp_owner (403 `Forbidden`). The last msp_owner and the last msp_admin keep their role: 400 `Cannot remove last msp_owner` / `Cannot remove last msp_admin`.",
    access: access.msp("msp_admin"),
    effect: "write",
    params: MspMemberParams,
    body: MspRolesBody,
    response: {
      status: 200,
      schema: wrapped("members", z.object({ userId: z.string(), roles: z.array(z.enum(MSP_ROLES)) })),
    },
    errors: [403, 404, 409],
    handler: async ({ msp, params, body }) => ({
      body: {
        message: "Member updated",
        members: [await updateMspTeamMember(msp, params.userId, body.roles)],
      },
    }),
  }),
  operation({
    id: "removeMspMember",
    method: "DELETE",
    path: "/api/msps/{mspId}/members/{userId}",
    group: "msps",
    summary: "Remove an MSP member",
    description:
      "Removes the member from the MSP and the MSP from the user's `userMsps`. Removing an msp_owner needs an msp_owner; the last msp_owner and the last msp_admin cannot be removed (400).",
    access: access.msp("msp_admin"),
    effect: "delete",
    params: MspMemberParams,
    response: { status: 200, schema: MessageResponse },
    errors: [403, 404, 409],
    handler: async ({ msp, params }) => {
      await removeMspTeamMember(msp, params.userId);
      return { body: { message: "Member removed" } };
    },
  }),

  // ---- the MSP's invites
  operation({
    id: "listMspInvites",
    method: "GET",
    path: "/api/msps/{mspId}/invites",
    group: "msps",
    summary: "List the MSP's pending invites",
    description:
      "Lists the MSP's pending invites (accepted, rejected, cancelled and expired ones are gone), a page at a time.",
    access: access.msp("msp_admin"),
    effect: "read",
    params: MspParams,
    query: PaginationQuery,
    response: { status: 200, schema: paged("invites", MspInviteSchema) },
    errors: [403, 404],
    handler: async ({ msp, query }) => ({
      body: { message: "Invites retrieved", ...(await listMspInvites(msp, query)) },
    }),
  }),
  operation({
    id: "createMspInvite",
    method: "POST",
    path: "/api/msps/{mspId}/invites",
    group: "msps",
    summary: "Invite someone to the MSP",
    description:
      "Invites an e-mail address to join the MSP with MSP roles; the invite expires after 7 days. The invitee gets an e-mail (and, with an account, a user notification) and accepts with PUT /api/users/{userId}/invites/{inviteId}. Without roles: 400 `Roles required`; only an msp_owner invites an msp_owner. 409 `Invite already exists for this email` (use PUT to re-issue), or when the address is already a member.",
    access: access.msp("msp_admin"),
    effect: "write",
    params: MspParams,
    body: CreateMspInviteBody,
    response: { status: 201, schema: wrapped("invites", MspInviteSchema) },
    errors: [403, 404, 409, 502],
    handler: async ({ msp, body }) => ({
      status: 201,
      body: { message: "Invite created and sent", invites: [await createMspInvite(msp, body)] },
    }),
  }),
  operation({
    id: "updateMspInvite",
    method: "PUT",
    path: "/api/msps/{mspId}/invites/{inviteId}",
    group: "msps",
    summary: "Change an MSP invite's roles",
    description:
      "Replaces the invite's roles and extends its expiry by 14 days from the current expiry (from now if that has passed). Without roles: 400 `Roles required`.",
    access: access.msp("msp_admin"),
    effect: "write",
    params: MspInviteParams,
    body: MspRolesBody,
    response: { status: 200, schema: wrapped("invites", MspInviteSchema) },
    errors: [403, 404],
    handler: async ({ msp, params, body }) => ({
      body: { message: "Invite updated", invites: [await updateMspInvite(msp, params.inviteId, body)] },
    }),
  }),
  operation({
    id: "cancelMspInvite",
    method: "DELETE",
    path: "/api/msps/{mspId}/invites/{inviteId}",
    group: "msps",
    summary: "Cancel an MSP invite",
    description:
      "Cancels a pending invite: it can no longer be accepted, and the address can be invited again.",
    access: access.msp("msp_admin"),
    effect: "delete",
    params: MspInviteParams,
    response: { status: 200, schema: MessageResponse },
    errors: [403, 404],
    handler: async ({ msp, params }) => {
      await cancelMspInvite(msp, params.inviteId);
      return { body: { message: "Invite cancelled" } };
    },
  }),

  // ---- configurations
  operation({
    id: "getMspConfiguration",
    method: "GET",
    path: "/api/msps/{mspId}/configurations",
    group: "msps",
    summary: "Get the MSP's configuration",
    description:
      "Answers the MSP's configuration (spec 2.14): billing type and status, whether a payment method is on file (read only, `paymentMethodOnFile` and `paymentMethodUpdated`: an msp_owner adds one with POST /api/msps/{mspId}/billing/payment-method), promotional codes, and its own rates. Query `configurationType` may only be `msp`.",
    access: access.msp("msp_user"),
    effect: "read",
    params: MspParams,
    query: MspConfigurationQuery,
    response: {
      status: 200,
      schema: z.object({ message: z.string(), configuration: MspConfigurationSchema }),
    },
    errors: [403, 404],
    handler: async ({ msp }) => ({
      body: { message: "Configuration retrieved", configuration: await getMspConfiguration(msp) },
    }),
  }),
  operation({
    id: "updateMspConfiguration",
    method: "PUT",
    path: "/api/msps/{mspId}/configurations",
    group: "msps",
    summary: "Update the MSP's configuration",
    description:
      "An msp_admin sets `promotionalCodes` (array of {name, expiresAt}, or null). The MSP's own `rates`, `billingType` and `billingStatus` are set by operators with the admin CLI, never through the API: sending them is a 400 naming the field.",
    access: access.msp("msp_admin"),
    effect: "write",
    params: MspParams,
    body: UpdateMspConfigurationBody,
    response: {
      status: 200,
      schema: z.object({ message: z.string(), configuration: MspConfigurationSchema }),
    },
    errors: [403, 404],
    handler: async ({ msp, body }) => ({
      body: { message: "Configuration updated", configuration: await updateMspConfiguration(msp, body) },
    }),
  }),
  operation({
    id: "getMspClientConfiguration",
    method: "GET",
    path: `${CLIENT}/configurations`,
    group: "msps",
    summary: "Get a managed client's configuration",
    description:
      "Answers the managed-client configuration (spec 2.14): billing, top-up method, regions, sharing, limits, budget, rates and plan.",
    access: access.msp("msp_user"),
    effect: "read",
    params: MspClientParams,
    response: {
      status: 200,
      schema: z.object({ message: z.string(), configuration: ClientConfigurationSchema }),
    },
    errors: [403, 404],
    handler: async ({ msp }) => ({
      body: { message: "Configuration retrieved", configuration: await getManagedClientConfiguration(msp) },
    }),
  }),
  operation({
    id: "updateMspClientConfiguration",
    method: "PUT",
    path: `${CLIENT}/configurations`,
    group: "msps",
    summary: "Update a managed client's configuration",
    description:
      "All optional: billingTo, billingType (only `stripe`), topUpMethod, regionAccess (regions of the deployment), rates, budget thresholds, sharing, limits (positive integers or null, at most 10,000 a minute and 10,000,000 a day: above, a 400 naming `limits.<field>`; enforced per client on the data plane, 429 `client-limit-exceeded`). A `regionAccess` list restricts the regions the client's credentials, targets and proxies can be created in. A submitted rate is stored as max(clamp(rate, 0.7, 1), the MSP's rate); thresholds apply only when billed to the MSP by Stripe (minimum at least 5, maximum at least 20 and 10 above the minimum); `budget.current` is never set (400). Switching `billingTo` to `msp` needs a payment method on file for the MSP: 400 `Cannot bill to MSP: no payment method on file` (502 when the payment processor cannot be reached). Answers the changeable part of the configuration.",
    access: access.msp("msp_admin"),
    effect: "write",
    params: MspClientParams,
    body: UpdateClientConfigurationBody,
    response: {
      status: 200,
      schema: z.object({ message: z.string(), configuration: ConfigurationUpdateSchema }),
    },
    errors: [403, 404, 409, 502],
    handler: async ({ msp, body }) => ({
      body: {
        message: "Configuration updated",
        configuration: await updateManagedClientConfiguration(msp, body),
      },
    }),
  }),

  // ---- usage and budget
  operation({
    id: "getMspUsage",
    method: "GET",
    path: "/api/msps/{mspId}/usage",
    group: "msps",
    summary: "Report the managed clients' usage of a month",
    description:
      "Per managed client, for the calendar month `month` (YYYY-MM, UTC; required): requests, API seconds (the sum of request durations) and their price at the client's and at the MSP's `rates.apiSeconds` (USD, exact to 9 places; retail $0.0001 per API second). `totals` cover every managed client; rows are paged (`page`, `limit` default 100, at most 1000). With `Accept: text/csv` the same rows as CSV.",
    access: access.msp("msp_user"),
    effect: "read",
    params: MspParams,
    query: MspUsageQuery,
    response: {
      status: 200,
      schema: UsageReportSchema,
      alternatives: [{ contentType: "text/csv", render: usageCsv }],
    },
    errors: [403, 404],
    handler: async ({ msp, query }) => ({
      body: { message: "Usage retrieved", ...(await mspUsageReport(msp, query)) },
    }),
  }),
  operation({
    id: "topUpMspClientBudget",
    method: "POST",
    path: `${CLIENT}/top-ups`,
    group: "msps",
    summary: "Top up a managed client's budget",
    description:
      "Charges `amount` (USD, whole cents, at least 0.50) to the MSP's payment method and adds it to the client's `budget.current`; the budget may not end above its `maximumTopUpThreshold` (400 naming `amount`). The client must be billed to the MSP by Stripe (409), and no other top-up of it may be in progress (409). A charge the processor refuses is 402 `Payment failed: <reason>`; an unreachable processor 502. Answers `topUp` and the client's `budget`.",
    access: access.msp("msp_admin"),
    effect: "write",
    params: MspClientParams,
    body: MspTopUpBody,
    response: {
      status: 201,
      schema: z.object({ message: z.string(), topUp: TopUpSchema, budget: Budget }),
    },
    errors: [402, 403, 404, 409, 502],
    handler: async ({ msp, body }) => {
      const { budget, ...topUp } = await manualTopUp(msp, body.amount);
      return { status: 201, body: { message: "Budget topped up", topUp, budget } };
    },
  }),
];
