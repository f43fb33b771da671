/**
 * Dynamic client registration (RFC 7591) for public clients: what a registration may ask for, and
 * the redirect URI rules (OAuth 2.1 and RFC 8252): https, or http on a loopback host (a native
 * app's local listener); no fragment, no user info; exact strings, matched exactly later.
 */
import { oauthError } from "./errors.ts";

export const MAX_REDIRECT_URIS = 10;
export const MAX_REDIRECT_URI_LENGTH = 2000;
export const MAX_CLIENT_NAME_LENGTH = 200;
/** The largest registration or form body read (bytes). */
export const MAX_OAUTH_BODY_BYTES = 16 * 1024;

const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);
const GRANT_TYPES = ["authorization_code", "refresh_token"] as const;

/** Why a redirect URI may not be registered, or undefined when it may. */
export function redirectUriProblem(value: unknown): string | undefined {
  if (typeof value !== "string" || value.length === 0) return "must be a non-empty string";
  if (value.length > MAX_REDIRECT_URI_LENGTH) return `must be at most ${MAX_REDIRECT_URI_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "must be an absolute URL";
  }
  if (url.hash || value.includes("#")) return "must not have a fragment";
  if (url.username || url.password) return "must not carry user information";
  if (url.protocol === "https:") return undefined;
  if (url.protocol === "http:" && LOOPBACK_HOSTS.has(url.hostname)) return undefined;
  return "must use https, or http on a loopback host (localhost, 127.0.0.1, [::1])";
}

export interface ClientRegistration {
  clientName: string;
  redirectUris: string[];
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** A registration request's metadata, checked; throws `invalid_redirect_uri` or `invalid_client_metadata`. */
export function parseClientRegistration(body: unknown): ClientRegistration {
  if (!isRecord(body)) throw oauthError("invalid_client_metadata", "The body must be a JSON object");
  const uris = body.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0)
    throw oauthError("invalid_redirect_uri", "redirect_uris: at least one redirect URI is required");
  if (uris.length > MAX_REDIRECT_URIS)
    throw oauthError("invalid_redirect_uri", `redirect_uris: at most ${MAX_REDIRECT_URIS} are allowed`);
  for (const [index, uri] of uris.entries()) {
    const problem = redirectUriProblem(uri);
    if (problem) throw oauthError("invalid_redirect_uri", `redirect_uris[${index}]: ${problem}`);
  }
  const method = body.token_endpoint_auth_method;
  if (method !== undefined && method !== "none")
    throw oauthError(
      "invalid_client_metadata",
      "token_endpoint_auth_method: only public clients are supported (none)",
    );
  const grantTypes = body.grant_types;
  if (
    grantTypes !== undefined &&
    (!Array.isArray(grantTypes) ||
      !grantTypes.every((type) => (GRANT_TYPES as readonly unknown[]).includes(type)))
  )
    throw oauthError(
      "invalid_client_metadata",
      `grant_types: only ${GRANT_TYPES.join(" and ")} are supported`,
    );
  const responseTypes = body.response_types;
  if (
    responseTypes !== undefined &&
    (!Array.isArray(responseTypes) || !responseTypes.every((type) => type === "code"))
  )
    throw oauthError("invalid_client_metadata", "response_types: only code is supported");
  const name = body.client_name;
  if (name !== undefined && (typeof name !== "string" || name.length > MAX_CLIENT_NAME_LENGTH))
    throw oauthError(
      "invalid_client_metadata",
      `client_name: must be a string of at most ${MAX_CLIENT_NAME_LENGTH} characters`,
    );
  return {
    clientName: typeof name === "string" && name.trim() ? name.trim() : "Unnamed MCP client",
    redirectUris: [...new Set(uris as string[])],
  };
}

/** The registration's answer (RFC 7591 3.2.1): what was registered. */
export function registrationResponse(clientId: string, issuedAt: number, registration: ClientRegistration) {
  return {
    client_id: clientId,
    client_id_issued_at: issuedAt,
    client_name: registration.clientName,
    redirect_uris: registration.redirectUris,
    token_endpoint_auth_method: "none",
    grant_types: [...GRANT_TYPES],
    response_types: ["code"],
  };
}
