/**
 * Who calls the MCP endpoint (spec 5.2): the raw user token in `Authorization`, exactly as the
 * Core API's authorizer accepts it (lib/domain/authorizer.ts `authenticate`), or an OAuth 2.1
 * access token from lib/oauth, `Authorization: Bearer <access token>`. Without a valid credential
 * the answer is 401 with `WWW-Authenticate: Bearer resource_metadata="<origin>/.well-known/oauth-protected-resource"`
 * (RFC 9728), which is how an MCP client finds the authorization server.
 */
import { type AuthorizerContext, authenticate } from "#lib/domain/authorizer.ts";
import { verifyAccessToken } from "#lib/oauth/access-tokens.ts";

/** The authenticated caller: the same context the Core API's authorizer gives its handlers. */
export type Caller = AuthorizerContext;

/** The caller behind the request's credential, or undefined (-> 401). */
export async function authenticateMcp(request: Request): Promise<Caller | undefined> {
  const authorization = request.headers.get("authorization") ?? undefined;
  if (!authorization?.trim()) return undefined;
  // `Bearer <jwt>`: the OAuth 2.1 access token (lib/oauth), whose audience must be this resource,
  // `<origin>/mcp`. A user token never starts with `Bearer `, so this cannot shadow the raw token.
  const bearer = /^bearer\s+(\S+)$/i.exec(authorization.trim());
  if (bearer?.[1]) return verifyAccessToken(bearer[1], mcpResourceUrl(request));
  return authenticate(authorization, { stampUse: true });
}

/** The MCP resource (RFC 8707), the audience of its access tokens: `<origin>/mcp`. */
export function mcpResourceUrl(request: Request): string {
  return `${new URL(request.url).origin}/mcp`;
}

/** `<origin>/.well-known/oauth-protected-resource`, the RFC 9728 document of this resource. */
export function protectedResourceMetadataUrl(request: Request): string {
  return `${new URL(request.url).origin}/.well-known/oauth-protected-resource`;
}

/**
 * The message of a 401: what was wrong and how to send a credential. A user API token (`u-...`)
 * sent as `Bearer <token>` is named: `Bearer` is for OAuth access tokens, the user token goes as
 * it is (a bare "Unauthorized" left the caller guessing, issue 19).
 */
export function unauthorizedMessage(authorization: string | null): string {
  if (/^bearer\s+u-/i.test(authorization?.trim() ?? ""))
    return "Unauthorized: send the user API token as it is, without the Bearer prefix (Bearer is for OAuth access tokens)";
  return "Unauthorized: missing or invalid token. Send the user API token as it is, or an OAuth access token as Bearer <token>";
}

/** The 401 of a request without a valid credential. */
export function unauthorizedResponse(request: Request): Response {
  return Response.json(
    { message: unauthorizedMessage(request.headers.get("authorization")) },
    {
      status: 401,
      headers: {
        "WWW-Authenticate": `Bearer resource_metadata="${protectedResourceMetadataUrl(request)}"`,
        "Cache-Control": "no-store",
      },
    },
  );
}
