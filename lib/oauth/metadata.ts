/**
 * The discovery documents (docs/mcp-oauth.md). The issuer is the origin the request came to (the
 * function URL deployed, the runner's base URL locally), and the MCP resource is `<origin>/mcp`.
 */
export const MCP_PATH = "/mcp";

export const OAUTH_PATHS = {
  protectedResource: "/.well-known/oauth-protected-resource",
  protectedResourceOfMcp: `/.well-known/oauth-protected-resource${MCP_PATH}`,
  authorizationServer: "/.well-known/oauth-authorization-server",
  register: "/oauth/register",
  authorize: "/oauth/authorize",
  token: "/oauth/token",
} as const;

/** The issuer (origin) and the MCP resource of a request's URL. */
export function endpointsOf(requestUrl: string) {
  const issuer = new URL(requestUrl).origin;
  return { issuer, resource: `${issuer}${MCP_PATH}` };
}

/** The issuer of an MCP resource URL (`<origin>/mcp` -> `<origin>`). */
export const issuerOfResource = (resource: string) => new URL(resource).origin;

/** RFC 9728: the protected resource's metadata. */
export function protectedResourceMetadata(issuer: string) {
  return {
    resource: `${issuer}${MCP_PATH}`,
    authorization_servers: [issuer],
    bearer_methods_supported: ["header"],
    resource_name: "Proxy gateway MCP endpoint",
  };
}

/** RFC 8414: the authorization server's metadata. */
export function authorizationServerMetadata(issuer: string) {
  return {
    issuer,
    authorization_endpoint: `${issuer}${OAUTH_PATHS.authorize}`,
    token_endpoint: `${issuer}${OAUTH_PATHS.token}`,
    registration_endpoint: `${issuer}${OAUTH_PATHS.register}`,
    response_types_supported: ["code"],
    response_modes_supported: ["query"],
    grant_types_supported: ["authorization_code", "refresh_token"],
    code_challenge_methods_supported: ["S256"],
    token_endpoint_auth_methods_supported: ["none"],
    authorization_response_iss_parameter_supported: true,
  };
}
