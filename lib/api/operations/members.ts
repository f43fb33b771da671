/** Members and memberships (spec 4.2): who belongs to a client, seen from the client and from the user. */
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
import { getClientForMember, listClientsForUser } from "#lib/domain/clients.ts";
import { getMember, leaveClient, listMembers, removeMember, updateMemberRoles } from "#lib/domain/members.ts";
import { UpdateMemberBody } from "#lib/http/schemas.ts";
import { CLIENT_ROLES } from "#lib/shared/roles.ts";
import { ClientSchema } from "./clients.ts";

/** A member as the API shows it (spec 2.2): the membership's roles and the user's contact fields. */
export const MemberSchema = z.object({
  userId: z.string(),
  roles: z.array(z.enum(CLIENT_ROLES)),
  userEmail: z.string(),
  userFirstName: z.string(),
  userLastName: z.string(),
  userPhone: z.string(),
  userCreated: z.string().optional(),
  userUpdated: z.string().optional(),
});

const ClientParams = pathParams("clientId");
const MemberParams = pathParams("clientId", "userId");
const UserParams = pathParams("userId");
const MembershipParams = pathParams("userId", "membershipId");

export const memberOperations = [
  operation({
    id: "listMembers",
    method: "GET",
    path: "/api/clients/{clientId}/members",
    group: "members",
    summary: "List a client's members",
    description:
      "Lists the client's members with their roles and contact fields, a page at a time (query `page`, default 1, and `limit`, default 20, at most 100).",
    access: access.client("reader"),
    effect: "read",
    params: ClientParams,
    query: PaginationQuery,
    response: { status: 200, schema: paged("members", MemberSchema) },
    errors: [403, 404],
    handler: async ({ member, query }) => ({
      body: { message: "Members retrieved", ...(await listMembers(member, query)) },
    }),
  }),
  unsupportedOperation({
    id: "addMember",
    method: "POST",
    path: "/api/clients/{clientId}/members",
    group: "members",
    summary: "Add a member (not supported)",
    message: "Members cannot be added directly; invite them with POST /api/clients/{clientId}/invites",
    allow: ["GET"],
  }),
  operation({
    id: "getMember",
    method: "GET",
    path: "/api/clients/{clientId}/members/{userId}",
    group: "members",
    summary: "Get a member",
    description:
      "Answers one member of the client, as a one-element `members` array (404 Member not found when the user is not a member).",
    access: access.client("reader"),
    effect: "read",
    params: MemberParams,
    response: { status: 200, schema: wrapped("members", MemberSchema) },
    errors: [403, 404],
    handler: async ({ member, params }) => ({
      body: { message: "Member retrieved", members: [await getMember(member, params.userId)] },
    }),
  }),
  operation({
    id: "updateMember",
    method: "PUT",
    path: "/api/clients/{clientId}/members/{userId}",
    group: "members",
    summary: "Change a member's roles",
    description:
      "Replaces the member's roles (owner, admin, devops, user, reader). Only an owner grants the owner role, and the owner role is never removed through the API; the last remaining admin keeps the admin role. Both still answer 200, and the message says which role the member keeps.",
    access: access.client("admin"),
    effect: "write",
    params: MemberParams,
    body: UpdateMemberBody,
    response: { status: 200, schema: wrapped("members", MemberSchema) },
    errors: [403, 404, 409],
    handler: async ({ member, params, body }) => {
      const result = await updateMemberRoles(member, params.userId, body.roles);
      return { body: { message: result.message, members: [result.member] } };
    },
  }),
  operation({
    id: "removeMember",
    method: "DELETE",
    path: "/api/clients/{clientId}/members/{userId}",
    group: "members",
    summary: "Remove a member",
    description:
      "Removes the member from the client. Any member may remove themselves (leave); removing someone else needs the admin role, and an owner can only leave, never be removed. The last remaining admin or owner cannot be removed (400).",
    // Any member may leave: the admin role for removing someone else is the membership rule's
    // decision (lib/domain/member-rules.ts), as it depends on whom the path names.
    access: access.client("reader"),
    effect: "delete",
    params: MemberParams,
    response: { status: 200, schema: MessageResponse },
    errors: [403, 404, 409],
    handler: async ({ member, params }) => {
      await removeMember(member, params.userId);
      return { body: { message: "Member removed" } };
    },
  }),
  operation({
    id: "listMemberships",
    method: "GET",
    path: "/api/users/{userId}/memberships",
    group: "members",
    summary: "List the caller's memberships",
    description:
      "Lists the clients the caller belongs to, each with its members and their roles, a page at a time (query `page`, default 1, and `limit`, default 20, at most 100). Only the caller's own user id is allowed.",
    access: access.self,
    effect: "read",
    params: UserParams,
    query: PaginationQuery,
    response: { status: 200, schema: paged("clients", ClientSchema) },
    errors: [403, 404],
    handler: async ({ params, query }) => {
      const { clients, pagination } = await listClientsForUser(params.userId, query);
      return { body: { message: "Memberships retrieved", clients, pagination } };
    },
  }),
  unsupportedOperation({
    id: "createMembership",
    method: "POST",
    path: "/api/users/{userId}/memberships",
    group: "members",
    summary: "Create a membership (not supported)",
    message:
      "Memberships cannot be created directly; accept an invite with PUT /api/users/{userId}/invites/{inviteId}",
    allow: ["GET"],
  }),
  unsupportedOperation({
    id: "replaceMemberships",
    method: "PUT",
    path: "/api/users/{userId}/memberships",
    group: "members",
    summary: "Change memberships (not supported)",
    message:
      "Memberships cannot be changed here; accept an invite with PUT /api/users/{userId}/invites/{inviteId}, or an admin changes roles with PUT /api/clients/{clientId}/members/{userId}",
    allow: ["GET"],
  }),
  operation({
    id: "getMembership",
    method: "GET",
    path: "/api/users/{userId}/memberships/{membershipId}",
    group: "members",
    summary: "Get one of the caller's memberships",
    description:
      "Answers the client whose id is `membershipId`, if the caller belongs to it, as a one-element `clients` array with its members (404 Client not found otherwise).",
    access: access.self,
    effect: "read",
    params: MembershipParams,
    response: { status: 200, schema: wrapped("clients", ClientSchema) },
    errors: [403, 404],
    handler: async ({ params }) => ({
      body: {
        message: "Membership retrieved",
        clients: [await getClientForMember(params.membershipId, params.userId)],
      },
    }),
  }),
  unsupportedOperation({
    id: "createMembershipById",
    method: "POST",
    path: "/api/users/{userId}/memberships/{membershipId}",
    group: "members",
    summary: "Create a membership (not supported)",
    message:
      "Memberships cannot be created directly; accept an invite with PUT /api/users/{userId}/invites/{inviteId}",
    allow: ["GET", "DELETE"],
  }),
  unsupportedOperation({
    id: "updateMembership",
    method: "PUT",
    path: "/api/users/{userId}/memberships/{membershipId}",
    group: "members",
    summary: "Change a membership (not supported)",
    message:
      "Memberships cannot be changed here; an admin changes roles with PUT /api/clients/{clientId}/members/{userId}",
    allow: ["GET", "DELETE"],
  }),
  operation({
    id: "leaveClient",
    method: "DELETE",
    path: "/api/users/{userId}/memberships/{membershipId}",
    group: "members",
    summary: "Leave a client",
    description:
      "Ends the caller's own membership of the client `membershipId`. The last remaining admin or owner cannot leave (400).",
    access: access.self,
    effect: "delete",
    params: MembershipParams,
    response: { status: 200, schema: MessageResponse },
    errors: [403, 404, 409],
    handler: async ({ params }) => {
      await leaveClient(params.userId, params.membershipId);
      return { body: { message: "Membership removed" } };
    },
  }),
];
