/** Clients (spec 4.1): the organisations that own credentials, targets and proxies. */
import { z } from "zod";
import { access, operation, paged, pathParams, wrapped } from "#lib/api/operation.ts";
import { PaginationQuery } from "#lib/db/pagination.ts";
import { deleteClient } from "#lib/domain/account-deletion.ts";
import { createClient, getClient, listClientsForUser, renameClient } from "#lib/domain/clients.ts";
import { requireUser, toApiUser } from "#lib/domain/users.ts";
import { CreateClientBody, DeleteBody, DeleteQuery, UpdateClientBody } from "#lib/http/schemas.ts";
import { CLIENT_ROLES } from "#lib/shared/roles.ts";
import { immediately, UserSchema } from "./users.ts";

/** A client as the API shows it (spec 2.1, plus its deletion state). */
export const ClientSchema = z.object({
  clientId: z.string(),
  clientName: z.string(),
  clientMembers: z.array(z.object({ userId: z.string(), roles: z.array(z.enum(CLIENT_ROLES)) })),
  clientStatus: z
    .enum(["active", "pendingDeletion"])
    .describe("pendingDeletion from a scheduled DELETE until the client is purged"),
  clientDeletionScheduledAt: z
    .string()
    .optional()
    .describe("When a scheduled deletion happens (present while pendingDeletion)"),
  clientCreated: z.string(),
  clientUpdated: z.string(),
});

/** `{message, clients: [client]}`, with `users: [user]` (the caller) when `returnUser` was true. */
const ClientWithUser = wrapped("clients", ClientSchema).extend({
  users: z.array(UserSchema).optional().describe("The caller, updated; only when returnUser was true"),
});

const withUser = async (returnUser: boolean | undefined, userId: string) =>
  returnUser ? { users: [toApiUser(await requireUser(userId))] } : {};

const ClientParams = pathParams("clientId");

export const clientOperations = [
  operation({
    id: "listClients",
    method: "GET",
    path: "/api/clients",
    group: "clients",
    summary: "List the caller's clients",
    description:
      "Lists the clients the caller is a member of, each with its members and their roles, a page at a time (query `page`, default 1, and `limit`, default 20, at most 100).",
    access: access.user,
    effect: "read",
    query: PaginationQuery,
    response: { status: 200, schema: paged("clients", ClientSchema) },
    errors: [404],
    handler: async ({ principal, query }) => {
      const { clients, pagination } = await listClientsForUser(principal.userId, query);
      return { body: { message: "Clients retrieved", clients, pagination } };
    },
  }),
  operation({
    id: "createClient",
    method: "POST",
    path: "/api/clients",
    group: "clients",
    summary: "Create a client",
    description:
      "Creates an organisation with the caller as its owner and admin, and provisions its customer record with the payment processor. A user belongs to at most 100 clients. With `returnUser: true` the answer also carries the caller's updated user.",
    access: access.user,
    effect: "write",
    body: CreateClientBody,
    response: { status: 201, schema: ClientWithUser },
    errors: [404],
    handler: async ({ principal, body }) => {
      const client = await createClient(principal.userId, body.clientName);
      return {
        status: 201,
        body: {
          message: "Client created",
          clients: [client],
          ...(await withUser(body.returnUser, principal.userId)),
        },
      };
    },
  }),
  operation({
    id: "getClient",
    method: "GET",
    path: "/api/clients/{clientId}",
    group: "clients",
    summary: "Get a client",
    description:
      "Answers one client the caller is a member of, with its members and their roles (a client scheduled for deletion shows its status and date).",
    access: access.client("reader"),
    effect: "read",
    params: ClientParams,
    response: { status: 200, schema: wrapped("clients", ClientSchema) },
    errors: [403, 404],
    handler: async ({ member }) => ({
      body: { message: "Client retrieved", clients: [await getClient(member)] },
    }),
  }),
  operation({
    id: "updateClient",
    method: "PUT",
    path: "/api/clients/{clientId}",
    group: "clients",
    summary: "Rename a client",
    description:
      "Changes the client's name, the only field that can change. With `returnUser: true` the answer also carries the caller's user.",
    access: access.client("admin"),
    effect: "write",
    params: ClientParams,
    body: UpdateClientBody,
    response: { status: 200, schema: ClientWithUser },
    errors: [403, 404],
    handler: async ({ member, principal, body }) => {
      const client = await renameClient(member, body.clientName);
      return {
        body: {
          message: "Client updated",
          clients: [client],
          ...(await withUser(body.returnUser, principal.userId)),
        },
      };
    },
  }),
  operation({
    id: "deleteClient",
    method: "DELETE",
    path: "/api/clients/{clientId}",
    group: "clients",
    summary: "Delete a client",
    description:
      "Only the sole remaining administrator, an owner, may delete a client: while other admins or owners exist the answer is a 403 telling the caller to leave with DELETE /api/clients/{clientId}/members/{userId} instead. By default the client is marked `pendingDeletion`, its proxies stop serving, and it is purged after a grace period (the answer gives `clientDeletionScheduledAt`); with `immediatelyDelete: true` (in the body or the query string) everything under it, in every region, is deleted now.",
    access: access.client("owner"),
    effect: "delete",
    params: ClientParams,
    query: DeleteQuery,
    body: DeleteBody,
    response: {
      status: 200,
      schema: z.object({
        message: z.string(),
        clientDeletionScheduledAt: z
          .string()
          .nullable()
          .describe("When the client will be purged; null when it was deleted now"),
      }),
    },
    errors: [403, 404],
    handler: async ({ member, query, body }) => ({
      body: await deleteClient(member, immediately(body, query)),
    }),
  }),
];
