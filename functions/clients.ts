/** Clients (spec 4.1). */
import { deleteClientByMember } from "#lib/domain/account-deletion.ts";
import { createClient, getClientForMember, listClientsForUser, renameClient } from "#lib/domain/clients.ts";
import { requireUser, toApiUser } from "#lib/domain/users.ts";
import { createApiHandler } from "#lib/http/api-handler.ts";
import { parsePageRequest } from "#lib/http/pagination.ts";
import { bodyOf, immediatelyDelete, pathParam } from "#lib/http/request.ts";
import { CreateClientBody, UpdateClientBody } from "#lib/http/schemas.ts";

const withUser = async (returnUser: boolean | undefined, userId: string) =>
  returnUser ? { users: [toApiUser(await requireUser(userId))] } : {};

export const handler = createApiHandler({
  "GET /api/clients": async (req) => {
    const { clients, pagination } = await listClientsForUser(req.caller.userId, parsePageRequest(req.query));
    return { body: { message: "Clients retrieved", clients, pagination } };
  },
  "POST /api/clients": async (req) => {
    const body = bodyOf(req, CreateClientBody);
    const client = await createClient(req.caller.userId, body.clientName);
    return {
      status: 201,
      body: {
        message: "Client created",
        clients: [client],
        ...(await withUser(body.returnUser, req.caller.userId)),
      },
    };
  },
  "GET /api/clients/{clientId}": async (req) => {
    const client = await getClientForMember(pathParam(req, "clientId"), req.caller.userId);
    return { body: { message: "Client retrieved", clients: [client] } };
  },
  "PUT /api/clients/{clientId}": async (req) => {
    const body = bodyOf(req, UpdateClientBody);
    const client = await renameClient(pathParam(req, "clientId"), req.caller.userId, body.clientName);
    return {
      body: {
        message: "Client updated",
        clients: [client],
        ...(await withUser(body.returnUser, req.caller.userId)),
      },
    };
  },
  "DELETE /api/clients/{clientId}": async (req) => {
    const result = await deleteClientByMember(
      pathParam(req, "clientId"),
      req.caller.userId,
      immediatelyDelete(req),
    );
    return { body: result };
  },
});
