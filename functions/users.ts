/** Users (spec 4.4): the caller's own record. */
import { deleteUserAccount } from "#lib/domain/account-deletion.ts";
import { requireSelf } from "#lib/domain/members.ts";
import { requireUser, toApiUser, UserProfileUpdate, updateUserProfile } from "#lib/domain/users.ts";
import { createApiHandler } from "#lib/http/api-handler.ts";
import { bodyOf, immediatelyDelete } from "#lib/http/request.ts";

export const handler = createApiHandler({
  "GET /api/users": async (req) => {
    const user = await requireUser(req.caller.userId);
    return { body: { message: "User retrieved", users: [toApiUser(user)] } };
  },
  "GET /api/users/{userId}": async (req) => {
    const user = await requireUser(requireSelf(req.caller.userId, req.params.userId));
    return { body: { message: "User retrieved", users: [toApiUser(user)] } };
  },
  "PUT /api/users/{userId}": async (req) => {
    const userId = requireSelf(req.caller.userId, req.params.userId);
    const user = await updateUserProfile(userId, bodyOf(req, UserProfileUpdate));
    return { body: { message: "User updated", users: [toApiUser(user)] } };
  },
  "DELETE /api/users/{userId}": async (req) => {
    const userId = requireSelf(req.caller.userId, req.params.userId);
    return { body: await deleteUserAccount(userId, immediatelyDelete(req)) };
  },
});
