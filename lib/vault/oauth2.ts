/**
 * OAuth 2.0 client side for `oauth2` target credentials (spec 2.5): the gateway is the client,
 * the target API's authorization server issues the tokens. Flows: authorization_code (with PKCE,
 * S256), client_credentials, refresh_token. Every HTTP request goes through `sendOutbound`, so the
 * SSRF policy applies to token URLs as to any other user-supplied URL.
 *
 * Secrets hygiene: an OAuthError message carries the token endpoint's host, HTTP status and the
 * RFC 6749 `error` code, never a token, code, verifier or client secret; the server's
 * `error_description` is kept apart (shortened, with any of those values redacted).
 * See docs/outbound-requests.md.
 */
import { createHash, randomBytes } from "node:crypto";
import {
  type OutboundPolicy,
  type OutboundResponse,
  OutboundTimeoutError,
  sendOutbound,
} from "#lib/net/outbound.ts";
import { secretRedactor } from "./secret-redaction.ts";

export type OAuthTokenAuthMethod = "client_secret_basic" | "client_secret_post" | "none";

export interface OAuthTokenSet {
  accessToken: string;
  tokenType: string;
  /** Epoch milliseconds, or null when the server gave no `expires_in`. */
  expiresAt: number | null;
  refreshToken?: string;
  scope?: string;
}

export class OAuthError extends Error {
  override name = "OAuthError";
  /** HTTP status of the token endpoint's answer, when there was one. */
  status?: number;
  /** RFC 6749 section 5.2 error code (`invalid_grant`, `invalid_client`...), when given. */
  error?: string;
  /** The server's error_description, shortened and with known secrets redacted. */
  errorDescription?: string;
  constructor(
    message: string,
    details: { status?: number; error?: string; errorDescription?: string; cause?: unknown } = {},
  ) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    if (details.status !== undefined) this.status = details.status;
    if (details.error !== undefined) this.error = details.error;
    if (details.errorDescription !== undefined) this.errorDescription = details.errorDescription;
  }
}

const TOKEN_TIMEOUT_MS = 15_000;
const TOKEN_MAX_RESPONSE_BYTES = 256 * 1024;
const DEFAULT_EXPIRY_SKEW_MS = 60_000;

/** PKCE (RFC 7636): 32 random bytes as the verifier (43 characters), S256 challenge. */
export function createPkcePair(): { verifier: string; challenge: string; method: "S256" } {
  const verifier = randomBytes(32).toString("base64url");
  const challenge = createHash("sha256").update(verifier).digest("base64url");
  return { verifier, challenge, method: "S256" };
}

function httpUrl(value: string, what: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new OAuthError(`${what} is not a valid URL`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:")
    throw new OAuthError(`${what} must be an http(s) URL`);
  return url;
}

/**
 * The URL to send the user's browser to. Parameters already in `authorizationUrl` are kept;
 * `extraParams` (e.g. `prompt=consent`, `access_type=offline`) cannot override the protocol ones.
 */
export function buildAuthorizationUrl(p: {
  authorizationUrl: string;
  clientId: string;
  redirectUri: string;
  scope?: string;
  state: string;
  codeChallenge?: string;
  audience?: string;
  extraParams?: Record<string, string>;
}): string {
  const url = httpUrl(p.authorizationUrl, "authorizationUrl");
  for (const [name, value] of Object.entries(p.extraParams ?? {})) url.searchParams.set(name, value);
  url.searchParams.set("response_type", "code");
  url.searchParams.set("client_id", p.clientId);
  url.searchParams.set("redirect_uri", p.redirectUri);
  if (p.scope) url.searchParams.set("scope", p.scope);
  url.searchParams.set("state", p.state);
  if (p.codeChallenge) {
    url.searchParams.set("code_challenge", p.codeChallenge);
    url.searchParams.set("code_challenge_method", "S256");
  }
  if (p.audience) url.searchParams.set("audience", p.audience);
  return url.toString();
}

/** application/x-www-form-urlencoded encoding of one value (RFC 6749 section 2.3.1, appendix B). */
function formEncode(value: string): string {
  return new URLSearchParams([["", value]]).toString().slice(1);
}

interface ClientAuth {
  clientId: string;
  clientSecret?: string;
  tokenAuthMethod: OAuthTokenAuthMethod;
}

/** Client authentication: Basic header, or client_id (and secret) in the body. */
function applyClientAuth(auth: ClientAuth, form: URLSearchParams, headers: Record<string, string>) {
  if (auth.tokenAuthMethod === "client_secret_basic" && auth.clientSecret !== undefined) {
    const pair = `${formEncode(auth.clientId)}:${formEncode(auth.clientSecret)}`;
    headers.authorization = `Basic ${Buffer.from(pair, "utf8").toString("base64")}`;
    return;
  }
  form.set("client_id", auth.clientId);
  if (auth.tokenAuthMethod !== "none" && auth.clientSecret !== undefined) {
    form.set("client_secret", auth.clientSecret);
  }
}

/** The text with every form of the secrets redacted (lib/vault/secret-redaction.ts), then shortened. */
function redact(text: string, secrets: (string | undefined)[]): string {
  const out = secretRedactor(secrets).text(text);
  return out.length > 300 ? `${out.slice(0, 300)}…` : out;
}

/** RFC 6749 error codes are NQSCHAR; anything else from the server is not echoed. */
function safeErrorCode(value: unknown): string | undefined {
  return typeof value === "string" && /^[\x20-\x21\x23-\x5B\x5D-\x7E]{1,64}$/.test(value) ? value : undefined;
}

function parseJson(response: OutboundResponse): Record<string, unknown> | undefined {
  if (response.truncated) return undefined;
  try {
    const value: unknown = JSON.parse(response.body.toString("utf8"));
    return value && typeof value === "object" && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

function toTokenSet(json: Record<string, unknown>, receivedAt: number): OAuthTokenSet | undefined {
  const accessToken = json.access_token;
  if (typeof accessToken !== "string" || accessToken === "") return undefined;
  const tokenSet: OAuthTokenSet = {
    accessToken,
    tokenType: typeof json.token_type === "string" && json.token_type ? json.token_type : "Bearer",
    expiresAt: null,
  };
  const expiresIn = typeof json.expires_in === "string" ? Number(json.expires_in) : json.expires_in;
  if (typeof expiresIn === "number" && Number.isFinite(expiresIn) && expiresIn >= 0) {
    tokenSet.expiresAt = receivedAt + Math.round(expiresIn * 1000);
  }
  if (typeof json.refresh_token === "string" && json.refresh_token)
    tokenSet.refreshToken = json.refresh_token;
  if (typeof json.scope === "string") tokenSet.scope = json.scope;
  return tokenSet;
}

async function tokenRequest(
  p: ClientAuth & { tokenUrl: string; policy?: OutboundPolicy },
  grant: Record<string, string | undefined>,
  secrets: (string | undefined)[],
): Promise<OAuthTokenSet> {
  const url = httpUrl(p.tokenUrl, "tokenUrl");
  const form = new URLSearchParams();
  for (const [name, value] of Object.entries(grant)) if (value !== undefined) form.set(name, value);
  const headers: Record<string, string> = {
    "content-type": "application/x-www-form-urlencoded",
    accept: "application/json",
  };
  applyClientAuth(p, form, headers);
  const allSecrets = [...secrets, p.clientSecret];

  let response: OutboundResponse;
  try {
    response = await sendOutbound({
      method: "POST",
      url,
      headers,
      body: form.toString(),
      timeoutMs: TOKEN_TIMEOUT_MS,
      maxResponseBytes: TOKEN_MAX_RESPONSE_BYTES,
      maxRedirects: 0,
      ...(p.policy ? { policy: p.policy } : {}),
    });
  } catch (error) {
    const what = error instanceof OutboundTimeoutError ? "timed out" : "could not be reached";
    const detail = error instanceof Error ? `: ${redact(error.message, allSecrets)}` : "";
    throw new OAuthError(`Token endpoint ${url.host} ${what}${detail}`, { cause: error });
  }

  const json = parseJson(response);
  if (response.status < 200 || response.status >= 300) {
    const error = safeErrorCode(json?.error);
    const description =
      typeof json?.error_description === "string" ? redact(json.error_description, allSecrets) : undefined;
    throw new OAuthError(
      `Token request to ${url.host} failed with HTTP ${response.status}${error ? ` (${error})` : ""}`,
      {
        status: response.status,
        ...(error ? { error } : {}),
        ...(description ? { errorDescription: description } : {}),
      },
    );
  }
  const tokenSet = json ? toTokenSet(json, response.timings.headersAt) : undefined;
  if (!tokenSet) {
    throw new OAuthError(`Token endpoint ${url.host} returned no usable access token`, {
      status: response.status,
    });
  }
  return tokenSet;
}

/** authorization_code grant (RFC 6749 4.1.3), with the PKCE verifier when one was used. */
export async function exchangeAuthorizationCode(p: {
  tokenUrl: string;
  clientId: string;
  clientSecret?: string;
  tokenAuthMethod: OAuthTokenAuthMethod;
  code: string;
  redirectUri: string;
  codeVerifier?: string;
  policy?: OutboundPolicy;
}): Promise<OAuthTokenSet> {
  return tokenRequest(
    p,
    {
      grant_type: "authorization_code",
      code: p.code,
      redirect_uri: p.redirectUri,
      code_verifier: p.codeVerifier,
    },
    [p.code, p.codeVerifier],
  );
}

/** client_credentials grant (RFC 6749 4.4). `audience` is the Auth0/Okta style extension. */
export async function fetchClientCredentialsToken(p: {
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  tokenAuthMethod: OAuthTokenAuthMethod;
  scope?: string;
  audience?: string;
  extraTokenParams?: Record<string, string>;
  policy?: OutboundPolicy;
}): Promise<OAuthTokenSet> {
  return tokenRequest(
    p,
    { ...p.extraTokenParams, grant_type: "client_credentials", scope: p.scope, audience: p.audience },
    [],
  );
}

/**
 * refresh_token grant (RFC 6749 section 6). When the server does not rotate the refresh token,
 * the one sent stays valid and is returned in the token set.
 */
export async function refreshAccessToken(p: {
  tokenUrl: string;
  clientId: string;
  clientSecret?: string;
  tokenAuthMethod: OAuthTokenAuthMethod;
  refreshToken: string;
  scope?: string;
  policy?: OutboundPolicy;
}): Promise<OAuthTokenSet> {
  const tokens = await tokenRequest(
    p,
    { grant_type: "refresh_token", refresh_token: p.refreshToken, scope: p.scope },
    [p.refreshToken],
  );
  return tokens.refreshToken ? tokens : { ...tokens, refreshToken: p.refreshToken };
}

/** True when the access token expires within `skewMs` (default 60 s); never for tokens without expiry. */
export function isExpiring(
  tokens: OAuthTokenSet,
  now: number = Date.now(),
  skewMs = DEFAULT_EXPIRY_SKEW_MS,
): boolean {
  if (tokens.expiresAt === null) return false;
  return tokens.expiresAt - skewMs <= now;
}
