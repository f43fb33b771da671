/**
 * Invites (spec 2.3, 3, 4.3): a client's admins invite people by e-mail; the invitee accepts or
 * rejects on their own side (/api/users/{userId}/invites).
 */
import { z } from "zod";
import {
  access,
  MessageResponse,
  operation,
  paged,
  pathParams,
  unsupportedOperation,
  wrapped,
} from "#lib/api/operation.ts";
import { PaginationQuery } from "#lib/db/pagination.ts";
import {
  acceptAnyInvite,
  getAnyInviteeInvite,
  listAllInviteeInvites,
  rejectAnyInvite,
} from "#lib/domain/invitee-invites.ts";
import {
  cancelClientInvite,
  createInvite,
  getClientInvite,
  listClientInvites,
  updateClientInvite,
} from "#lib/domain/invites.ts";
import { AnswerInviteBody, CreateInviteBody, UpdateInviteBody } from "#lib/http/schemas.ts";
import { CLIENT_ROLES, MSP_ROLES } from "#lib/shared/roles.ts";

/** A pending invite as the API shows it (spec 2.3, plus its expiry as a date, who sent it and when). */
export const InviteSchema = z.object({
  inviteId: z.string(),
  clientName: z.string().describe("The inviting client's name when the invite was made"),
  pKey: z.literal("INVITATION"),
  sKey: z.string().describe("Equals inviteId"),
  roles: z.array(z.enum(CLIENT_ROLES)).describe("The roles the invitee gets on accepting"),
  userEmail: z.string().describe("The invitee's address, lower case"),
  parentId: z.string().describe("The client id"),
  TTL: z.number().int().describe("Expiry, Unix seconds: 7 days after creation or the last re-send"),
  inviteExpiresAt: z.string().describe("The same expiry as an ISO 8601 timestamp"),
  invitedBy: z.string().optional().describe("The user id of the member who made the invite"),
  inviteCreated: z.string().optional(),
  inviteUpdated: z.string().optional(),
});

/** An MSP invite as its invitee sees it (spec 2.3a, with the MSP it comes from). */
export const InviteeMspInviteSchema = z.object({
  inviteType: z.literal("msp"),
  inviteId: z.string(),
  mspId: z.string(),
  mspName: z.string().describe("The inviting MSP's name when the invite was made"),
  userEmail: z.string(),
  roles: z.array(z.enum(MSP_ROLES)).describe("The MSP roles the invitee gets on accepting"),
  inviteExpiry: z.string(),
  inviteCreated: z.string(),
  inviteUpdated: z.string(),
});

/** What the invitee's side lists: a client invite, or an MSP invite (`inviteType` `msp`). */
const AnyInviteSchema = z.union([InviteSchema, InviteeMspInviteSchema]);

const ClientParams = pathParams("clientId");
const ClientInviteParams = pathParams("clientId", "inviteId");
const UserParams = pathParams("userId");
const UserInviteParams = pathParams("userId", "inviteId");

const USER_INVITES_POST_MESSAGE =
  "Invites are created by a client admin with POST /api/clients/{clientId}/invites";

export const inviteOperations = [
  operation({
    id: "listInvites",
    method: "GET",
    path: "/api/clients/{clientId}/invites",
    group: "invites",
    summary: "List a client's pending invites",
    description:
      "Lists the client's pending invites (accepted, rejected, cancelled and expired ones are gone), a page at a time (query `page`, default 1, and `limit`, default 20, at most 100). Needs the admin role, as managing invites does.",
    access: access.client("admin"),
    effect: "read",
    params: ClientParams,
    query: PaginationQuery,
    response: { status: 200, schema: paged("invites", InviteSchema) },
    errors: [403, 404],
    handler: async ({ member, query }) => ({
      body: { message: "Invites retrieved", ...(await listClientInvites(member, query)) },
    }),
  }),
  operation({
    id: "createInvite",
    method: "POST",
    path: "/api/clients/{clientId}/invites",
    group: "invites",
    summary: "Invite someone to a client",
    description:
      "Invites an e-mail address to join the client with one role. The invitee gets an e-mail with an accept link (and, if they already have an account, a user notification); the invite expires after 7 days. Only an owner may invite an owner. 409 when the address is already a member or already has a pending invite to this client, or the client is scheduled for deletion; at most 100 pending invites per client. If the e-mail cannot be sent, the invite is withdrawn (502).",
    access: access.client("admin"),
    effect: "write",
    params: ClientParams,
    body: CreateInviteBody,
    response: { status: 201, schema: wrapped("invites", InviteSchema) },
    errors: [403, 404, 409, 502],
    handler: async ({ member, body }) => ({
      status: 201,
      body: { message: "Invite created and sent", invites: [await createInvite(member, body)] },
    }),
  }),
  operation({
    id: "getInvite",
    method: "GET",
    path: "/api/clients/{clientId}/invites/{inviteId}",
    group: "invites",
    summary: "Get a client's invite",
    description:
      "Answers one pending invite of the client (404 once it is accepted, rejected, cancelled or expired).",
    access: access.client("admin"),
    effect: "read",
    params: ClientInviteParams,
    response: { status: 200, schema: wrapped("invites", InviteSchema) },
    errors: [403, 404],
    handler: async ({ member, params }) => ({
      body: { message: "Invite retrieved", invites: [await getClientInvite(member, params.inviteId)] },
    }),
  }),
  operation({
    id: "updateInvite",
    method: "PUT",
    path: "/api/clients/{clientId}/invites/{inviteId}",
    group: "invites",
    summary: "Update or re-send an invite",
    description:
      "`roles` replaces the invite's roles (only an owner may grant owner); `resend: true` e-mails the invite again and renews its 7 days. At least one of the two is required. A failed re-send answers 502 (the role change is kept).",
    access: access.client("admin"),
    effect: "write",
    params: ClientInviteParams,
    body: UpdateInviteBody,
    response: { status: 200, schema: wrapped("invites", InviteSchema) },
    errors: [403, 404, 502],
    handler: async ({ member, params, body }) => ({
      body: {
        message: body.resend ? "Invite updated and sent again" : "Invite updated",
        invites: [await updateClientInvite(member, params.inviteId, body)],
      },
    }),
  }),
  operation({
    id: "cancelInvite",
    method: "DELETE",
    path: "/api/clients/{clientId}/invites/{inviteId}",
    group: "invites",
    summary: "Cancel an invite",
    description:
      "Cancels a pending invite: its accept link stops working and the address can be invited again.",
    access: access.client("admin"),
    effect: "delete",
    params: ClientInviteParams,
    response: { status: 200, schema: MessageResponse },
    errors: [403, 404],
    handler: async ({ member, params }) => {
      await cancelClientInvite(member, params.inviteId);
      return { body: { message: "Invite cancelled" } };
    },
  }),
  operation({
    id: "listUserInvites",
    method: "GET",
    path: "/api/users/{userId}/invites",
    group: "invites",
    summary: "List the invites addressed to me",
    description:
      "Lists the pending invites addressed to the caller's e-mail address, from every client and every MSP (those with `inviteType` `msp`), a page at a time (query `page` and `limit`). The path's user must be the caller.",
    access: access.self,
    effect: "read",
    params: UserParams,
    query: PaginationQuery,
    response: { status: 200, schema: paged("invites", AnyInviteSchema) },
    errors: [403, 404],
    handler: async ({ params, query }) => ({
      body: { message: "Invites retrieved", ...(await listAllInviteeInvites(params.userId, query)) },
    }),
  }),
  unsupportedOperation({
    id: "createUserInvite",
    method: "POST",
    path: "/api/users/{userId}/invites",
    group: "invites",
    summary: "Not supported: invites are made by a client",
    message: USER_INVITES_POST_MESSAGE,
    allow: ["GET"],
  }),
  operation({
    id: "getUserInvite",
    method: "GET",
    path: "/api/users/{userId}/invites/{inviteId}",
    group: "invites",
    summary: "Get an invite addressed to me",
    description:
      "Answers one pending invite (of a client or an MSP) addressed to the caller's e-mail address; an invite addressed to someone else is 404, as if it did not exist.",
    access: access.self,
    effect: "read",
    params: UserInviteParams,
    response: { status: 200, schema: wrapped("invites", AnyInviteSchema) },
    errors: [403, 404],
    handler: async ({ params }) => ({
      body: {
        message: "Invite retrieved",
        invites: [await getAnyInviteeInvite(params.userId, params.inviteId)],
      },
    }),
  }),
  operation({
    id: "answerUserInvite",
    method: "PUT",
    path: "/api/users/{userId}/invites/{inviteId}",
    group: "invites",
    summary: "Accept or reject an invite",
    description:
      "`acceptInvite: true` makes the caller a member of the client (or of the MSP, for an MSP invite: the user's `userMsps` lists it) with the invite's roles, answering the client id (or MSP id) and roles; `false` rejects the invite. Either way the invite is gone. 409 when the caller is already a member or the client is scheduled for deletion; 400 when the caller already belongs to the most clients a user may.",
    access: access.self,
    effect: "write",
    params: UserInviteParams,
    body: AnswerInviteBody,
    response: {
      status: 200,
      schema: MessageResponse.extend({
        clientId: z.string().optional().describe("The client joined (when a client invite was accepted)"),
        mspId: z.string().optional().describe("The MSP joined (when an MSP invite was accepted)"),
        roles: z
          .array(z.enum([...CLIENT_ROLES, ...MSP_ROLES]))
          .optional()
          .describe("The roles granted (when accepted)"),
      }),
    },
    errors: [403, 404, 409],
    handler: async ({ params, body }) => {
      if (!body.acceptInvite) {
        await rejectAnyInvite(params.userId, params.inviteId);
        return { body: { message: "Invite rejected" } };
      }
      const accepted = await acceptAnyInvite(params.userId, params.inviteId);
      return accepted.kind === "msp"
        ? { body: { message: "Invite accepted", mspId: accepted.mspId, roles: accepted.roles } }
        : { body: { message: "Invite accepted", clientId: accepted.clientId, roles: accepted.roles } };
    },
  }),
  operation({
    id: "rejectUserInvite",
    method: "DELETE",
    path: "/api/users/{userId}/invites/{inviteId}",
    group: "invites",
    summary: "Reject an invite",
    description:
      "Rejects an invite addressed to the caller: it is gone, and the client may invite the address again.",
    access: access.self,
    effect: "delete",
    params: UserInviteParams,
    response: { status: 200, schema: MessageResponse },
    errors: [403, 404],
    handler: async ({ params }) => {
      await rejectAnyInvite(params.userId, params.inviteId);
      return { body: { message: "Invite rejected" } };
    },
  }),
];
