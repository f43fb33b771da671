/** Members and memberships (spec 4.2). */
import { getClientForMember, listClientsForUser } from "#lib/domain/clients.ts";
import { getMember, listMembers, removeMember, requireSelf, updateMemberRoles } from "#lib/domain/members.ts";
import { createApiHandler, unsupported } from "#lib/http/api-handler.ts";
import { parsePageRequest } from "#lib/http/pagination.ts";
import { bodyOf, pathParam } from "#lib/http/request.ts";
import { UpdateMemberBody } from "#lib/http/schemas.ts";

export const handler = createApiHandler({
  "GET /api/clients/{clientId}/members": async (req) => {
    const result = await listMembers(
      pathParam(req, "clientId"),
      req.caller.userId,
      parsePageRequest(req.query),
    );
    return { body: { message: "Members retrieved", ...result } };
  },
  "POST /api/clients/{clientId}/members": unsupported(
    "Members cannot be added directly; invite them with POST /api/clients/{clientId}/invites",
    ["GET"],
  ),
  "GET /api/clients/{clientId}/members/{userId}": async (req) => {
    const member = await getMember(pathParam(req, "clientId"), req.caller.userId, pathParam(req, "userId"));
    return { body: { message: "Member retrieved", members: [member] } };
  },
  "PUT /api/clients/{clientId}/members/{userId}": async (req) => {
    const { roles } = bodyOf(req, UpdateMemberBody);
    const result = await updateMemberRoles(
      pathParam(req, "clientId"),
      req.caller.userId,
      pathParam(req, "userId"),
      roles,
    );
    return { body: { message: result.message, members: [result.member] } };
  },
  "DELETE /api/clients/{clientId}/members/{userId}": async (req) => {
    await removeMember(pathParam(req, "clientId"), req.caller.userId, pathParam(req, "userId"));
    return { body: { message: "Member removed" } };
  },
  "GET /api/users/{userId}/memberships": async (req) => {
    const userId = requireSelf(req.caller.userId, req.params.userId);
    const { clients, pagination } = await listClientsForUser(userId, parsePageRequest(req.query));
    return { body: { message: "Memberships retrieved", clients, pagination } };
  },
  "POST /api/users/{userId}/memberships": unsupported(
    "Memberships cannot be created directly; accept an invite with PUT /api/users/{userId}/invites/{inviteId}",
    ["GET"],
  ),
  "PUT /api/users/{userId}/memberships": unsupported(
    "Memberships cannot be changed here; accept an invite with PUT /api/users/{userId}/invites/{inviteId}, or an admin changes roles with PUT /api/clients/{clientId}/members/{userId}",
    ["GET"],
  ),
  "POST /api/users/{userId}/memberships/{membershipId}": unsupported(
    "Memberships cannot be created directly; accept an invite with PUT /api/users/{userId}/invites/{inviteId}",
    ["GET", "DELETE"],
  ),
  "GET /api/users/{userId}/memberships/{membershipId}": async (req) => {
    const userId = requireSelf(req.caller.userId, req.params.userId);
    const client = await getClientForMember(pathParam(req, "membershipId"), userId);
    return { body: { message: "Membership retrieved", clients: [client] } };
  },
  "PUT /api/users/{userId}/memberships/{membershipId}": unsupported(
    "Memberships cannot be changed here; an admin changes roles with PUT /api/clients/{clientId}/members/{userId}",
    ["GET", "DELETE"],
  ),
  "DELETE /api/users/{userId}/memberships/{membershipId}": async (req) => {
    const userId = requireSelf(req.caller.userId, req.params.userId);
    await removeMember(pathParam(req, "membershipId"), userId, userId);
    return { body: { message: "Membership removed" } };
  },
});
