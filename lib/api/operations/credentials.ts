/**
 * Credentials (spec 2.5, 4.5): the vault. Secrets go in once and never come back out: the
 * credential schema below has no field for the secret or its encrypted envelope, so neither can
 * leave whatever the stored item holds. Also the credential and token tests (designed here,
 * docs/credentials.md).
 */
import { z } from "zod";
import { access, MessageResponse, operation, paged, pathParams, wrapped } from "#lib/api/operation.ts";
import { CredentialItem } from "#lib/db/entities/credential.ts";
import { PaginationQuery, paginate } from "#lib/db/pagination.ts";
import { CredentialTestBody, testCredential, testCredentialToken } from "#lib/domain/credential-test.ts";
import {
  createCredential,
  deleteCredential,
  getCredential,
  listCredentials,
  updateCredential,
} from "#lib/domain/credentials.ts";
import { CreateCredentialBody, UpdateCredentialBody } from "#lib/http/resource-schemas.ts";
import { queryBoolean } from "#lib/http/validation.ts";
import { AUTH_TYPE_USAGE, AUTH_TYPES, type AuthType, SECRET_SCHEMAS } from "#lib/vault/secret-schemas.ts";

// Picked, not omitted: a field added to the stored credential (a secret's envelope, say) stays
// out of every answer until it is named here.
const {
  credentialId,
  credentialName,
  credentialType,
  credentialDefaultRuleEffect,
  notes,
  clientId,
  parentId,
  credentialCreatedAt,
  credentialUpdatedAt,
} = CredentialItem.shape;

/** A credential as the API shows it (spec 2.5): metadata only, never the secret. */
export const CredentialSchema = z.object({
  pKey: z.string().describe("The client id"),
  sKey: z.string().describe("The credential id"),
  credentialId,
  credentialName,
  credentialType,
  credentialAuthType: z.enum(AUTH_TYPES).describe("How the secret authenticates (spec 2.5)"),
  credentialRegion: z.string().describe("Immutable: the secret is encrypted with this region's key"),
  credentialDefaultRuleEffect,
  singleUse: z.boolean().describe("Deleted, with the proxies using it, after its first successful use"),
  credentialTemporary: z
    .boolean()
    .describe("An OAuth2 authorization_code or PKCE credential still waiting for its authorization"),
  credentialSecretHeaders: z
    .array(z.string())
    .optional()
    .describe("Names (never values) of the headers that carry the secret: the request log redacts them"),
  notes,
  userId: z.string().describe("The user who created the credential"),
  clientId,
  parentId,
  credentialCreatedAt,
  credentialUpdatedAt,
  oauthAuthorizedAt: z.string().optional().describe("When the OAuth2 provider's authorization completed"),
  oauthRefreshedAt: z.string().optional().describe("When the gateway last refreshed the OAuth2 access token"),
});

/** The creation's answer: an OAuth2 authorization_code / PKCE credential also carries the URL to open. */
const CreatedCredentialSchema = CredentialSchema.extend({
  authorizationUrl: z
    .string()
    .optional()
    .describe(
      "OAuth2 authorization_code and PKCE: open it to consent; the provider redirects to /webhooks/oauth2",
    ),
});

/** The live credential test's answer (docs/credentials.md): secrets in it are replaced by `[redacted]`. */
const CredentialTestResultSchema = z.object({
  request: z.object({ method: z.string(), url: z.string() }),
  status: z.number().int().describe("The status the tested server answered"),
  headers: z.record(z.string(), z.union([z.string(), z.array(z.string())])),
  body: z.string().describe("At most 64 KiB: UTF-8 text, or base64 (see bodyEncoding)"),
  bodyEncoding: z.enum(["utf8", "base64"]),
  bodyTruncated: z.boolean(),
  durationMs: z.number(),
});

/** The token test's answer: when the fetched token expires, never the token. */
const TokenTestResultSchema = z.object({
  tokenReceived: z.boolean(),
  tokenLength: z.number().int(),
  expiresAt: z.string().nullable(),
  expiresInSeconds: z.number().int().nullable(),
  durationMs: z.number(),
});

const ListQuery = PaginationQuery.extend({
  includeTemporary: queryBoolean
    .optional()
    .describe("Also list OAuth2 credentials still waiting for their authorization (default false)"),
});

/**
 * The creation body as documented: one branch per auth type, each with the credential types it is
 * usable as and its secret's schema (the ones the vault checks). Validation stays
 * CreateCredentialBody's and the vault's (parseCredentialSecret), with their messages.
 */
const branchOf = (authType: AuthType) =>
  CreateCredentialBody.extend({
    authType: z.literal(authType),
    credentialType: z.enum(AUTH_TYPE_USAGE[authType]),
    secret: SECRET_SCHEMAS[authType],
  }).describe(`A credential whose secret is of auth type ${authType}`);
const DocumentedCreateCredentialBody = z
  .discriminatedUnion(
    "authType",
    AUTH_TYPES.map(branchOf) as unknown as [ReturnType<typeof branchOf>, ...ReturnType<typeof branchOf>[]],
  )
  .meta({ discriminator: { propertyName: "authType" } });

const ClientParams = pathParams("clientId");
const CredentialParams = pathParams("clientId", "credentialId");

export const credentialOperations = [
  operation({
    id: "listCredentials",
    method: "GET",
    path: "/api/clients/{clientId}/credentials",
    group: "credentials",
    summary: "List credentials",
    description:
      "Lists the client's credentials in every region, newest first, a page at a time (query `page`, default 1, and `limit`, default 20, at most 100). Metadata only: a secret is never shown. Temporary OAuth2 credentials still waiting for their authorization are left out unless `includeTemporary=true`.",
    access: access.client("reader"),
    effect: "read",
    params: ClientParams,
    query: ListQuery,
    response: { status: 200, schema: paged("credentials", CredentialSchema) },
    errors: [403, 404],
    handler: async ({ member, query }) => {
      const all = await listCredentials(member, query.includeTemporary ?? false);
      const { items, pagination } = paginate(all, query);
      return { body: { message: "Credentials retrieved", credentials: items, pagination } };
    },
  }),
  operation({
    id: "createCredential",
    method: "POST",
    path: "/api/clients/{clientId}/credentials",
    group: "credentials",
    summary: "Create a credential",
    description:
      "Stores a proxy credential (how callers authenticate to a proxy) or a target credential (how the gateway authenticates to a target) in a region. The `secret`, shaped by `authType`, is checked, encrypted with the region's key and never shown again. An OAuth2 `authorization_code` or `pkce` credential is temporary until its authorization completes: the answer carries `authorizationUrl`, to open in a browser within the hour.",
    access: access.client("devops"),
    effect: "write",
    params: ClientParams,
    body: CreateCredentialBody,
    documentation: { body: DocumentedCreateCredentialBody },
    response: { status: 201, schema: wrapped("credentials", CreatedCredentialSchema) },
    errors: [403, 404],
    handler: async ({ member, body, baseUrl, principal }) => {
      // Started from the console (its session): the provider's redirect ends on the credential's page there.
      const returnTo = principal.session ? "console" : "api";
      const { credential, authorizationUrl } = await createCredential(member, body, baseUrl, returnTo);
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
  }),
  operation({
    id: "getCredential",
    method: "GET",
    path: "/api/clients/{clientId}/credentials/{credentialId}",
    group: "credentials",
    summary: "Get a credential",
    description: "Answers one credential of the client, whatever its region: its metadata, never the secret.",
    access: access.client("reader"),
    effect: "read",
    params: CredentialParams,
    response: { status: 200, schema: wrapped("credentials", CredentialSchema) },
    errors: [403, 404],
    handler: async ({ member, params }) => ({
      body: {
        message: "Credential retrieved",
        credentials: [await getCredential(member, params.credentialId)],
      },
    }),
  }),
  operation({
    id: "updateCredential",
    method: "PUT",
    path: "/api/clients/{clientId}/credentials/{credentialId}",
    group: "credentials",
    summary: "Update a credential's metadata",
    description:
      "Changes only `credentialName`, `notes` and `credentialDefaultRuleEffect`. The secret, region, type and auth type can never change (a 400 names the field): create a new credential instead. A change reaches the data plane on the next request.",
    access: access.client("devops"),
    effect: "write",
    params: CredentialParams,
    body: UpdateCredentialBody,
    response: { status: 200, schema: wrapped("credentials", CredentialSchema) },
    errors: [403, 404],
    handler: async ({ member, params, body }) => ({
      body: {
        message: "Credential updated",
        credentials: [await updateCredential(member, params.credentialId, body)],
      },
    }),
  }),
  operation({
    id: "deleteCredential",
    method: "DELETE",
    path: "/api/clients/{clientId}/credentials/{credentialId}",
    group: "credentials",
    summary: "Delete a credential",
    description:
      "Deletes the credential and its secret, its rules, and every proxy that uses it (as proxy or target credential). The answer says how many proxies went with it.",
    access: access.client("devops"),
    effect: "delete",
    params: CredentialParams,
    response: { status: 200, schema: MessageResponse },
    errors: [403, 404],
    handler: async ({ member, params }) => {
      const { deletedProxies } = await deleteCredential(member, params.credentialId);
      return {
        body: {
          message: `Credential deleted, with ${deletedProxies} prox${deletedProxies === 1 ? "y" : "ies"} using it`,
        },
      };
    },
  }),
  operation({
    id: "testCredential",
    method: "POST",
    path: "/api/clients/{clientId}/credentials/{credentialId}/test",
    group: "credentials",
    summary: "Test a credential with a live request",
    description:
      "Sends one GET or POST with the credential applied (apiKey, bearer, jwt, basicAuth, custom or none) to one of the client's targets (`targetId`, at its test path or `path`) or to a full `url`, which needs the devops role (it could carry the secret to any server). Extra `headers` and `query` never override the credential. Answers the status, headers, up to 64 KiB of body and the timing, with every secret value replaced by `[redacted]`. A refused address is a 400; an unreachable target a 502 and a timeout a 504, with their message. While the organisation's billing is suspended, a 402 `billing-suspended` (the data plane's answer) and nothing is sent.",
    access: access.client("user"),
    // Nothing stored changes, but the request it sends (a POST, say) may change the target.
    effect: "write",
    params: CredentialParams,
    body: CredentialTestBody,
    // One of `targetId` or `url`, not both (the generated example would give both).
    documentation: {
      examples: {
        body: {
          method: "GET",
          targetId: "5b2e9c1d-3a4f-4d6e-b7c8-9d0e1f2a3b4c",
          path: "/v1/status",
          timeoutSeconds: 10,
        },
      },
    },
    response: { status: 200, schema: wrapped("tests", CredentialTestResultSchema) },
    errors: [402, 403, 404, 502, 504],
    handler: async ({ member, params, body }) => ({
      body: {
        message: "Credential test sent",
        tests: [await testCredential(member, params.credentialId, body)],
      },
    }),
  }),
  operation({
    id: "testCredentialToken",
    method: "POST",
    path: "/api/clients/{clientId}/credentials/{credentialId}/token-test",
    group: "credentials",
    summary: "Fetch a token with a credential",
    description:
      "Fetches a fresh token of a customToken or oauth2 client_credentials credential and answers whether one came and when it expires, never the token itself. Takes no body. A refused address is a 400; a failing token endpoint a 502 and a timeout a 504, with their message. While the organisation's billing is suspended, a 402 `billing-suspended` (the data plane's answer) and nothing is sent.",
    access: access.client("user"),
    effect: "read",
    params: CredentialParams,
    response: { status: 200, schema: wrapped("tokenTests", TokenTestResultSchema) },
    errors: [402, 403, 404, 502, 504],
    handler: async ({ member, params }) => ({
      body: {
        message: "Token fetched",
        tokenTests: [await testCredentialToken(member, params.credentialId)],
      },
    }),
  }),
];
