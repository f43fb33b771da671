/** Credentials (spec 4.5): the vault. Secrets go in once and never come back out. */

import { z } from "zod";
import { testCredential, testCredentialToken } from "#lib/domain/credential-test.ts";
import {
  createCredential,
  deleteCredential,
  getCredential,
  listCredentials,
  updateCredential,
} from "#lib/domain/credentials.ts";
import { createApiHandler } from "#lib/http/api-handler.ts";
import { paginate, parsePageRequest } from "#lib/http/pagination.ts";
import { bodyOf, pathParam } from "#lib/http/request.ts";
import { CreateCredentialBody, UpdateCredentialBody } from "#lib/http/resource-schemas.ts";
import { parseInput, queryBoolean } from "#lib/http/validation.ts";

const ListQuery = z.object({ includeTemporary: queryBoolean.optional() });

export const handler = createApiHandler({
  "GET /api/clients/{clientId}/credentials": async (req) => {
    const page = parsePageRequest(req.query);
    const { includeTemporary } = parseInput(
      ListQuery,
      { includeTemporary: req.query.includeTemporary },
      "query",
    );
    const all = await listCredentials(
      pathParam(req, "clientId"),
      req.caller.userId,
      includeTemporary ?? false,
    );
    const { items, pagination } = paginate(all, page);
    return { body: { message: "Credentials retrieved", credentials: items, pagination } };
  },
  "POST /api/clients/{clientId}/credentials": async (req) => {
    const { credential, authorizationUrl } = await createCredential(
      pathParam(req, "clientId"),
      req.caller.userId,
      bodyOf(req, CreateCredentialBody),
      req.baseUrl,
    );
    return {
      status: 201,
      body: {
        message: authorizationUrl
          ? "Credential created; open authorizationUrl to authorize it"
          : "Credential created",
        credentials: [authorizationUrl ? { ...credential, authorizationUrl } : credential],
      },
    };
  },
  "GET /api/clients/{clientId}/credentials/{credentialId}": async (req) => {
    const credential = await getCredential(
      pathParam(req, "clientId"),
      req.caller.userId,
      pathParam(req, "credentialId"),
    );
    return { body: { message: "Credential retrieved", credentials: [credential] } };
  },
  "PUT /api/clients/{clientId}/credentials/{credentialId}": async (req) => {
    const credential = await updateCredential(
      pathParam(req, "clientId"),
      req.caller.userId,
      pathParam(req, "credentialId"),
      bodyOf(req, UpdateCredentialBody),
    );
    return { body: { message: "Credential updated", credentials: [credential] } };
  },
  "POST /api/clients/{clientId}/credentials/{credentialId}/test": async (req) => {
    const result = await testCredential(
      pathParam(req, "clientId"),
      req.caller.userId,
      pathParam(req, "credentialId"),
      req.body,
    );
    return { body: { message: "Credential test sent", tests: [result] } };
  },
  "POST /api/clients/{clientId}/credentials/{credentialId}/token-test": async (req) => {
    const result = await testCredentialToken(
      pathParam(req, "clientId"),
      req.caller.userId,
      pathParam(req, "credentialId"),
    );
    return { body: { message: "Token fetched", tokenTests: [result] } };
  },
  "DELETE /api/clients/{clientId}/credentials/{credentialId}": async (req) => {
    const { deletedProxies } = await deleteCredential(
      pathParam(req, "clientId"),
      req.caller.userId,
      pathParam(req, "credentialId"),
    );
    return {
      body: {
        message: `Credential deleted, with ${deletedProxies} prox${deletedProxies === 1 ? "y" : "ies"} using it`,
      },
    };
  },
});
