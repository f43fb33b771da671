/**
 * A user's own API tokens (spec 5.1, issue 21): list, create and revoke, for oneself only (any
 * other user id is a 403, as for every `/api/users/{userId}/...` route). The raw token is in the
 * creation answer and nowhere else: not in a listing, a log line, the request log, or an MCP
 * result (createUserToken is not an MCP tool: lib/mcp/tools.ts MCP_EXCLUDED_OPERATIONS).
 */
import { z } from "zod";
import { access, MessageResponse, operation, pathParams, wrapped } from "#lib/api/operation.ts";
import { sessionSecretHashOf } from "#lib/domain/accounts.ts";
import {
  issueToken,
  LAST_USED_PRECISION_MS,
  listUserTokens,
  MAX_TOKENS_PER_USER,
  NewTokenBody,
  revokeToken,
} from "#lib/domain/tokens.ts";

const tokenFields = {
  tokenId: z.string().describe("The token's id (`tok_` and 16 hex digits): what DELETE takes"),
  tokenName: z.string().describe("The name its owner gave it (empty for tokens issued without one)"),
  tokenPreview: z.string().describe("The token masked: `u-…` and its last 4 characters; never the raw value"),
  tokenCreated: z.string().describe("When it was created (ISO 8601)"),
};

/** A token as listed: never its value. */
export const TokenSummarySchema = z.object({
  ...tokenFields,
  tokenLastUsed: z
    .string()
    .nullable()
    .describe(
      `When it was last accepted (ISO 8601), to within ${LAST_USED_PRECISION_MS / 1000} s (the stamp is written at most once a minute); null while never used`,
    ),
});

/** A token as created: the raw value, this once. */
export const CreatedTokenSchema = z.object({
  ...tokenFields,
  token: z
    .string()
    .describe(
      "The raw token (`u-` and 43 characters), to send as it is in `Authorization`. Shown in this answer only: it is stored as a hash and cannot be retrieved again",
    ),
});

const UserParams = pathParams("userId");
const TokenParams = pathParams("userId", "tokenId");

export const tokenOperations = [
  operation({
    id: "listUserTokens",
    method: "GET",
    path: "/api/users/{userId}/tokens",
    group: "users",
    summary: "List the caller's API tokens",
    description:
      "Answers the caller's own API tokens, oldest first: id, name, a masked preview, creation time and last use. Never the token's value. Any other user id is a 403.",
    access: access.self,
    effect: "read",
    params: UserParams,
    response: { status: 200, schema: wrapped("tokens", TokenSummarySchema) },
    errors: [403, 404],
    handler: async ({ params }) => ({
      body: { message: "Tokens retrieved", tokens: await listUserTokens(params.userId) },
    }),
  }),
  operation({
    id: "createUserToken",
    method: "POST",
    path: "/api/users/{userId}/tokens",
    group: "users",
    summary: "Create an API token for the caller",
    description: `Creates an API token for the caller's own user, named \`tokenName\`, and answers it once, in \`token\`: only its hash is stored, so it cannot be shown again. A user holds at most ${MAX_TOKENS_PER_USER} tokens (exact under concurrent requests); one more is a 400 saying to revoke one first. Any other user id is a 403. Not offered as an MCP tool, so the raw token never reaches a tool result.`,
    access: access.self,
    effect: "write",
    params: UserParams,
    body: NewTokenBody,
    response: { status: 201, schema: wrapped("tokens", CreatedTokenSchema) },
    errors: [403, 404],
    handler: async ({ params, body, principal, headers }) => {
      // Issued only while the request's own credential is alive (a revocation racing it: docs/accounts.md#recovery-ends-every-way-in).
      const sessionSecretHash = principal.tokenId ? undefined : sessionSecretHashOf(headers.cookie);
      const issued = await issueToken(params.userId, {
        tokenName: body.tokenName,
        issuedWith: principal.tokenId
          ? { tokenId: principal.tokenId }
          : sessionSecretHash
            ? { sessionSecretHash }
            : undefined,
      });
      return {
        status: 201,
        body: {
          message: "Token created. Copy it now: it is not shown again",
          tokens: [
            {
              tokenId: issued.tokenId,
              tokenName: issued.tokenName,
              token: issued.token,
              tokenPreview: issued.masked,
              tokenCreated: issued.createdAt,
            },
          ],
        },
      };
    },
  }),
  operation({
    id: "deleteUserToken",
    method: "DELETE",
    path: "/api/users/{userId}/tokens/{tokenId}",
    group: "users",
    summary: "Revoke one of the caller's API tokens",
    description:
      "Revokes one of the caller's own API tokens: its next request, on the Core API or the MCP endpoint, is a 401 (no cached authorizer decision keeps it alive). Revoking the token that makes this request is allowed. An unknown token id is a 404; any other user id a 403.",
    access: access.self,
    effect: "delete",
    params: TokenParams,
    response: { status: 200, schema: MessageResponse },
    errors: [403, 404],
    handler: async ({ params }) => {
      await revokeToken(params.userId, params.tokenId);
      return { body: { message: "Token revoked" } };
    },
  }),
];
