/** Users (spec 4.4): the caller's own record. */
import { z } from "zod";
import { access, operation, pathParams, wrapped } from "#lib/api/operation.ts";
import { deleteUserAccount } from "#lib/domain/account-deletion.ts";
import { requireUser, toApiUser, UserProfileUpdate, updateUserProfile } from "#lib/domain/users.ts";
import { DeleteBody, DeleteQuery } from "#lib/http/schemas.ts";

/** A user as the API shows it (spec 2.4): tokens masked, no internals. */
export const UserSchema = z.object({
  userId: z.string(),
  pKey: z.literal("USER"),
  sKey: z.string().describe("Equals userId"),
  userClients: z.array(z.string()).describe("The ids of the clients the user is a member of"),
  userUsername: z.string(),
  userEmail: z.string(),
  userBio: z.string(),
  userPhone: z.string(),
  userFirstName: z.string(),
  userLastName: z.string(),
  userTokens: z
    .array(z.string())
    .describe("The user's API tokens, masked (`u-…` and the last 4 characters); never the raw value"),
  userMsps: z.array(z.string()).describe("The ids of the MSPs the user belongs to"),
  systemAdmin: z.boolean().describe("An operator of the deployment"),
  userStatus: z
    .literal("pendingDeletion")
    .optional()
    .describe("Present while the account is scheduled for deletion"),
  userDeletionScheduledAt: z.string().optional().describe("When a scheduled deletion happens"),
  userCreated: z.string(),
  userUpdated: z.string(),
});

/** `immediatelyDelete` from the JSON body or the query string (body first); default false. */
export const immediately = (body: z.infer<typeof DeleteBody>, query: z.infer<typeof DeleteQuery>) =>
  body?.immediatelyDelete ?? query.immediatelyDelete ?? false;

const UserParams = pathParams("userId");
const Users = wrapped("users", UserSchema);

export const userOperations = [
  operation({
    id: "getCurrentUser",
    method: "GET",
    path: "/api/users",
    group: "users",
    summary: "Get the caller's user",
    description:
      "Answers the user the token belongs to, as a one-element `users` array: profile, the ids of their clients and MSPs, and their API tokens masked.",
    access: access.user,
    effect: "read",
    response: { status: 200, schema: Users },
    errors: [404],
    handler: async ({ principal }) => ({
      body: { message: "User retrieved", users: [toApiUser(await requireUser(principal.userId))] },
    }),
  }),
  operation({
    id: "getUser",
    method: "GET",
    path: "/api/users/{userId}",
    group: "users",
    summary: "Get a user",
    description: "Answers the caller's own user by id (any other user id is a 403), as GET /api/users does.",
    access: access.self,
    effect: "read",
    params: UserParams,
    response: { status: 200, schema: Users },
    errors: [403, 404],
    handler: async ({ params }) => ({
      body: { message: "User retrieved", users: [toApiUser(await requireUser(params.userId))] },
    }),
  }),
  operation({
    id: "updateUser",
    method: "PUT",
    path: "/api/users/{userId}",
    group: "users",
    summary: "Update the caller's profile",
    description:
      "Changes any of userBio, userPhone, userFirstName and userLastName of the caller's own user (at least one; any other field is a 400). Answers the updated user.",
    access: access.self,
    effect: "write",
    params: UserParams,
    body: UserProfileUpdate,
    response: { status: 200, schema: Users },
    errors: [403, 404],
    handler: async ({ params, body }) => ({
      body: {
        message: "User updated",
        users: [toApiUser(await updateUserProfile(params.userId, body))],
      },
    }),
  }),
  operation({
    id: "deleteUser",
    method: "DELETE",
    path: "/api/users/{userId}",
    group: "users",
    summary: "Delete the caller's account",
    description:
      "By default schedules the deletion of the caller's own account after a grace period (the answer gives `userDeletionScheduledAt`); with `immediatelyDelete: true` (in the body or the query string) deletes it now, irreversibly: the user leaves every client, and a client of which they are the only member is deleted with them. Refused (409) while the user is the last admin or owner of a client that has other members.",
    access: access.self,
    effect: "delete",
    params: UserParams,
    query: DeleteQuery,
    body: DeleteBody,
    response: {
      status: 200,
      schema: z.object({
        message: z.string(),
        userDeletionScheduledAt: z
          .string()
          .nullable()
          .describe("When the account will be deleted; null when it was deleted now"),
      }),
    },
    errors: [403, 404, 409],
    handler: async ({ params, query, body }) => ({
      body: await deleteUserAccount(params.userId, immediately(body, query)),
    }),
  }),
];
