/** Client invites and the invitee's side of them (spec 4.3 and the invite states of section 3). */
import {
  acceptInvite,
  cancelClientInvite,
  createInvite,
  getClientInvite,
  getInviteeInvite,
  listClientInvites,
  listInviteeInvites,
  rejectInvite,
  updateClientInvite,
} from "#lib/domain/invites.ts";
import { requireSelf } from "#lib/domain/members.ts";
import { createApiHandler, unsupported } from "#lib/http/api-handler.ts";
import { parsePageRequest } from "#lib/http/pagination.ts";
import { bodyOf, pathParam } from "#lib/http/request.ts";
import { AnswerInviteBody, CreateInviteBody, UpdateInviteBody } from "#lib/http/schemas.ts";

export const handler = createApiHandler({
  "GET /api/clients/{clientId}/invites": async (req) => {
    const result = await listClientInvites(
      pathParam(req, "clientId"),
      req.caller.userId,
      parsePageRequest(req.query),
    );
    return { body: { message: "Invites retrieved", ...result } };
  },
  "POST /api/clients/{clientId}/invites": async (req) => {
    const body = bodyOf(req, CreateInviteBody);
    const invite = await createInvite(pathParam(req, "clientId"), req.caller.userId, body);
    return { status: 201, body: { message: "Invite created and sent", invites: [invite] } };
  },
  "GET /api/clients/{clientId}/invites/{inviteId}": async (req) => {
    const invite = await getClientInvite(
      pathParam(req, "clientId"),
      req.caller.userId,
      pathParam(req, "inviteId"),
    );
    return { body: { message: "Invite retrieved", invites: [invite] } };
  },
  "PUT /api/clients/{clientId}/invites/{inviteId}": async (req) => {
    const body = bodyOf(req, UpdateInviteBody);
    const invite = await updateClientInvite(
      pathParam(req, "clientId"),
      req.caller.userId,
      pathParam(req, "inviteId"),
      body,
    );
    return {
      body: { message: body.resend ? "Invite updated and sent again" : "Invite updated", invites: [invite] },
    };
  },
  "DELETE /api/clients/{clientId}/invites/{inviteId}": async (req) => {
    await cancelClientInvite(pathParam(req, "clientId"), req.caller.userId, pathParam(req, "inviteId"));
    return { body: { message: "Invite cancelled" } };
  },
  "GET /api/users/{userId}/invites": async (req) => {
    const userId = requireSelf(req.caller.userId, req.params.userId);
    const result = await listInviteeInvites(userId, parsePageRequest(req.query));
    return { body: { message: "Invites retrieved", ...result } };
  },
  "POST /api/users/{userId}/invites": unsupported(
    "Invites are created by a client admin with POST /api/clients/{clientId}/invites",
    ["GET"],
  ),
  "GET /api/users/{userId}/invites/{inviteId}": async (req) => {
    const userId = requireSelf(req.caller.userId, req.params.userId);
    const invite = await getInviteeInvite(userId, pathParam(req, "inviteId"));
    return { body: { message: "Invite retrieved", invites: [invite] } };
  },
  "PUT /api/users/{userId}/invites/{inviteId}": async (req) => {
    const userId = requireSelf(req.caller.userId, req.params.userId);
    const { acceptInvite: accept } = bodyOf(req, AnswerInviteBody);
    const inviteId = pathParam(req, "inviteId");
    if (!accept) {
      await rejectInvite(userId, inviteId);
      return { body: { message: "Invite rejected" } };
    }
    const result = await acceptInvite(userId, inviteId);
    return { body: { message: "Invite accepted", clientId: result.clientId, roles: result.roles } };
  },
  "DELETE /api/users/{userId}/invites/{inviteId}": async (req) => {
    const userId = requireSelf(req.caller.userId, req.params.userId);
    await rejectInvite(userId, pathParam(req, "inviteId"));
    return { body: { message: "Invite rejected" } };
  },
});
