/**
 * The MCP endpoint's OAuth 2.1 authorization server (docs/mcp-oauth.md): registration, the
 * authorization request's checks, approval (an authorization code), and the token endpoint's two
 * grants. Plain functions on parsed parameters; lib/oauth/http.ts parses, calls and shapes.
 */
import { createHash, randomBytes, randomUUID } from "node:crypto";
import {
  claimPendingClientPlace,
  countPendingClients,
  extendOAuthClient,
  findOAuthClient,
  type OAuthClientItem,
  oauthClientKeys,
  putOAuthClient,
  releasePendingClientPlace,
} from "#lib/db/entities/oauth-client.ts";
import {
  AUTHORIZATION_CODE_TTL_SECONDS,
  findAuthorizationCode,
  oauthCodeKeys,
  putAuthorizationCode,
  redeemAuthorizationCode,
} from "#lib/db/entities/oauth-code.ts";
import {
  findOAuthGrant,
  type OAuthGrantItem,
  oauthGrantKeys,
  REFRESH_TOKEN_TTL_SECONDS,
  revokeOAuthGrant,
  rotateRefreshToken,
  wasRotatedRefreshToken,
} from "#lib/db/entities/oauth-grant.ts";
import { findUser } from "#lib/db/entities/user.ts";
import { nowIso, nowSeconds } from "#lib/db/store.ts";
import { consumeRequest } from "#lib/domain/rate-limit.ts";
import { issueToken, MAX_TOKEN_NAME_LENGTH } from "#lib/domain/tokens.ts";
import { ACCESS_TOKEN_TTL_SECONDS, signAccessToken } from "./access-tokens.ts";
import { type ClientRegistration, registrationResponse } from "./client-metadata.ts";
import { oauthError } from "./errors.ts";
import { isS256Challenge, verifierMatches } from "./pkce.ts";
import {
  PENDING_CLIENT_TTL_SECONDS,
  pendingBucketExpiry,
  pendingBucketsAt,
  pendingRetryAfterSeconds,
  pendingRoom,
  type RegistrationLimits,
  registrationSourceOf,
} from "./registration-limits.ts";

const MAX_STATE_LENGTH = 1024;
const MAX_SCOPE_LENGTH = 1000;
const MAX_PARAM_LENGTH = 2048;

const sha256 = (value: string) => createHash("sha256").update(value, "utf8").digest("hex");
const secret = () => randomBytes(32).toString("base64url");

/**
 * Request parameters (query or form), each at most once (RFC 6749 3.1) and bounded. Throws
 * `invalid_request` naming the parameter.
 */
export function singleParams(params: URLSearchParams): Map<string, string> {
  const single = new Map<string, string>();
  for (const [name, value] of params) {
    if (single.has(name)) throw oauthError("invalid_request", `${name}: given more than once`);
    if (value.length > MAX_PARAM_LENGTH) throw oauthError("invalid_request", `${name}: too long`);
    single.set(name, value);
  }
  return single;
}

const required = (params: Map<string, string>, name: string) => {
  const value = params.get(name);
  if (!value) throw oauthError("invalid_request", `${name}: required`);
  return value;
};

// ---- registration (RFC 7591) ----

/**
 * Register a client, within the registration limits (lib/oauth/registration-limits.ts): first the
 * source address's rate (429), then a place among the pending clients (503); both with when to try
 * again. The client is stored pending: it expires in PENDING_CLIENT_TTL_SECONDS unless a user
 * approves it.
 */
export async function registerClient(
  registration: ClientRegistration,
  context: { sourceIp?: string; limits: RegistrationLimits; nowMs?: number },
) {
  const { limits } = context;
  const nowMs = context.nowMs ?? Date.now();
  // The rate first, alone: a refused caller costs one write, not the 24 reads of the pending count.
  const rate = await consumeRequest(`OAUTHREG#${registrationSourceOf(context.sourceIp)}`, limits.perMinute, {
    nowMs,
  });
  if (!rate.allowed)
    throw oauthError(
      "temporarily_unavailable",
      `registration: at most ${limits.perMinute} registrations a minute from one address; try again in ${rate.retryAfterSeconds} s`,
      { status: 429, retryAfterSeconds: rate.retryAfterSeconds },
    );
  const buckets = pendingBucketsAt(nowMs);
  const earlier = await countPendingClients(buckets.earlier);
  const room = pendingRoom(limits.pendingMax, [...earlier.values()]);
  if (!(await claimPendingClientPlace(buckets.current, room, pendingBucketExpiry(buckets.current)))) {
    const retryAfterSeconds = pendingRetryAfterSeconds(nowMs, earlier);
    throw oauthError(
      "temporarily_unavailable",
      `registration: ${limits.pendingMax} registered clients are waiting for a user's first approval, the most there may be; try again later`,
      { status: 503, retryAfterSeconds },
    );
  }
  const clientId = `mcp-${randomUUID()}`;
  const now = Math.floor(nowMs / 1000);
  const item: OAuthClientItem = {
    ...oauthClientKeys.item(clientId),
    entity: "oauthClient",
    clientId,
    clientName: registration.clientName,
    redirectUris: registration.redirectUris,
    createdAt: new Date(nowMs).toISOString(),
    TTL: now + PENDING_CLIENT_TTL_SECONDS,
    pendingBucket: buckets.current,
  };
  try {
    await putOAuthClient(item);
  } catch (error) {
    await releasePendingClientPlace(buckets.current).catch(() => undefined);
    throw error;
  }
  return registrationResponse(clientId, now, registration);
}

// ---- the authorization request ----

/** Who asks and where the answer goes. Errors of the request are shown, never redirected (lib/oauth/http.ts). */
export interface ClientAndRedirect {
  client: OAuthClientItem;
  redirectUri: string;
}

/** The client and redirect URI (exactly one of the client's registered ones), or `invalid_request`. */
export async function resolveClientAndRedirect(params: Map<string, string>): Promise<ClientAndRedirect> {
  const clientId = required(params, "client_id");
  const redirectUri = required(params, "redirect_uri");
  const client = await findOAuthClient(clientId);
  if (!client) throw oauthError("invalid_request", "client_id: unknown client");
  if (!client.redirectUris.includes(redirectUri))
    throw oauthError("invalid_request", "redirect_uri: not registered for this client");
  return { client, redirectUri };
}

/** The rest of an authorization request, checked; an error here is shown on an error page too. */
export interface AuthorizationParams {
  codeChallenge: string;
  state?: string;
  resource: string;
  scope?: string;
}

export function checkAuthorizationParams(params: Map<string, string>, resource: string): AuthorizationParams {
  const responseType = params.get("response_type");
  if (responseType !== "code") throw oauthError("unsupported_response_type", "response_type: must be code");
  const codeChallenge = required(params, "code_challenge");
  if (params.get("code_challenge_method") !== "S256")
    throw oauthError("invalid_request", "code_challenge_method: must be S256");
  if (!isS256Challenge(codeChallenge))
    throw oauthError("invalid_request", "code_challenge: must be a base64url SHA-256 (43 characters)");
  const state = params.get("state");
  if (state !== undefined && state.length > MAX_STATE_LENGTH)
    throw oauthError("invalid_request", `state: at most ${MAX_STATE_LENGTH} characters`);
  const scope = params.get("scope");
  if (scope !== undefined && scope.length > MAX_SCOPE_LENGTH)
    throw oauthError("invalid_request", `scope: at most ${MAX_SCOPE_LENGTH} characters`);
  checkResource(params, resource);
  return { codeChallenge, state, resource, scope };
}

/** RFC 8707: a `resource` given must be the MCP resource (one value: parameters are single here). */
function checkResource(params: Map<string, string>, resource: string) {
  const given = params.get("resource");
  if (given !== undefined && given !== resource)
    throw oauthError("invalid_target", `resource: this server issues tokens for ${resource} only`);
}

/** The name of the API token an approval issues: `MCP: <client name>`, within the name's bound. */
export const mcpTokenNameOf = (clientName: string) => `MCP: ${clientName}`.slice(0, MAX_TOKEN_NAME_LENGTH);

/**
 * Approve an authorization request for a signed-in user (password or session checked by the
 * caller): a new API token of the user named `MCP: <client name>` (its raw value is dropped here,
 * never shown or stored in clear), and a single-use code bound to the client, redirect URI, PKCE
 * challenge, resource, user and that token. Revoking the token cuts the agent off. Throws
 * `invalid_request` when the client has gone meanwhile, and the tokens' ApiError (400) when the
 * user holds the most tokens allowed.
 */
export async function approveAuthorization(
  request: ClientAndRedirect & AuthorizationParams,
  userId: string,
  /** The console session that approves (not a password): the token is issued only while it lives. */
  sessionSecretHash?: string,
): Promise<string> {
  const extended = await extendOAuthClient(request.client.clientId);
  if (!extended) throw oauthError("invalid_request", "client_id: unknown client");
  const token = await issueToken(userId, {
    tokenName: mcpTokenNameOf(request.client.clientName),
    issuedWith: sessionSecretHash ? { sessionSecretHash } : undefined,
  });
  // Its first approval: the client no longer counts among the pending ones.
  if (extended.pendingBucket !== undefined) await releasePendingClientPlace(extended.pendingBucket);
  const code = secret();
  await putAuthorizationCode({
    ...oauthCodeKeys.item(sha256(code)),
    entity: "oauthCode",
    clientId: request.client.clientId,
    redirectUri: request.redirectUri,
    codeChallenge: request.codeChallenge,
    resource: request.resource,
    userId,
    tokenId: token.tokenId,
    createdAt: nowIso(),
    TTL: nowSeconds() + AUTHORIZATION_CODE_TTL_SECONDS,
  });
  return code;
}

// ---- the token endpoint ----

export interface TokenResponse {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
  refresh_token: string;
}

/** A refresh token names its grant: `<grantId>.<secret>`; only its SHA-256 is stored. */
const refreshTokenOf = (grantId: string) => `${grantId}.${secret()}`;
const grantIdOfRefreshToken = (token: string) => {
  const match = /^(g-[A-Za-z0-9_-]{22})\.[A-Za-z0-9_-]{43}$/.exec(token);
  return match?.[1];
};

async function tokenResponse(grant: OAuthGrantItem, refreshToken: string): Promise<TokenResponse> {
  return {
    access_token: await signAccessToken(grant),
    token_type: "Bearer",
    expires_in: ACCESS_TOKEN_TTL_SECONDS,
    refresh_token: refreshToken,
  };
}

const invalidGrant = (description: string) => oauthError("invalid_grant", description);

/**
 * grant_type=authorization_code: code + code_verifier (S256) + redirect_uri + client_id. The
 * code's single use is decided by a conditional write; a code used again revokes the grant the
 * first use issued (RFC 6749 10.5).
 */
export async function exchangeAuthorizationCode(
  params: Map<string, string>,
  resource: string,
): Promise<TokenResponse> {
  const code = required(params, "code");
  const verifier = required(params, "code_verifier");
  const redirectUri = required(params, "redirect_uri");
  const clientId = required(params, "client_id");
  checkResource(params, resource);
  const stored = await findAuthorizationCode(sha256(code));
  if (!stored) throw invalidGrant("code: unknown or expired");
  if (stored.redeemedAt !== undefined) {
    if (stored.grantId) await revokeOAuthGrant(stored.grantId);
    throw invalidGrant("code: already used; the tokens it issued are revoked");
  }
  if (stored.TTL <= nowSeconds()) throw invalidGrant("code: unknown or expired");
  if (stored.clientId !== clientId) throw invalidGrant("client_id: the code was issued to another client");
  if (stored.redirectUri !== redirectUri)
    throw invalidGrant("redirect_uri: does not match the authorization request");
  if (stored.resource !== resource) throw invalidGrant("resource: the code was issued for another resource");
  if (!verifierMatches(verifier, stored.codeChallenge))
    throw invalidGrant("code_verifier: does not match the code challenge");
  const grantId = `g-${randomBytes(16).toString("base64url")}`;
  const refreshToken = refreshTokenOf(grantId);
  const now = nowIso();
  const grant: OAuthGrantItem = {
    ...oauthGrantKeys.item(grantId),
    entity: "oauthGrant",
    grantId,
    clientId,
    userId: stored.userId,
    tokenId: stored.tokenId,
    resource,
    refreshHash: sha256(refreshToken),
    createdAt: now,
    rotatedAt: now,
    TTL: nowSeconds() + REFRESH_TOKEN_TTL_SECONDS,
  };
  if (!(await redeemAuthorizationCode(stored, grant))) {
    // Another use of the code won the conditional write: this is a reuse; revoke what it issued.
    const winner = await findAuthorizationCode(sha256(code));
    if (winner?.grantId) await revokeOAuthGrant(winner.grantId);
    throw invalidGrant("code: already used; the tokens it issued are revoked");
  }
  return tokenResponse(grant, refreshToken);
}

/**
 * grant_type=refresh_token: rotation. The grant takes the new refresh token only while it holds the
 * presented one (a conditional write). A real refresh token of the grant that was already rotated
 * away (its SHA-256 is one of the grant's rotated markers), or the loser of two concurrent uses of
 * the current one, revokes the grant (OAuth 2.1 4.3.1: replay detection for public clients). Any
 * other token is only refused: the grant id is readable in every access token, so a token made up
 * from it proves nothing and may not revoke anything. A grant whose API token was revoked is
 * revoked too.
 */
export async function refreshGrant(params: Map<string, string>, resource: string): Promise<TokenResponse> {
  const presented = required(params, "refresh_token");
  const clientId = required(params, "client_id");
  checkResource(params, resource);
  const grantId = grantIdOfRefreshToken(presented);
  if (!grantId) throw invalidGrant("refresh_token: unknown, used or expired");
  const current = await findOAuthGrant(grantId);
  if (!current) throw invalidGrant("refresh_token: unknown, used or expired");
  if (current.clientId !== clientId) throw invalidGrant("client_id: the token was issued to another client");
  if (current.resource !== resource)
    throw invalidGrant("resource: the token was issued for another resource");
  const presentedHash = sha256(presented);
  if (current.refreshHash !== presentedHash) {
    if (!(await wasRotatedRefreshToken(grantId, presentedHash)))
      throw invalidGrant("refresh_token: unknown, used or expired");
    await revokeOAuthGrant(grantId);
    throw invalidGrant("refresh_token: already used; the grant is revoked");
  }
  // Is the API token the grant is bound to still alive?
  const user = await findUser(current.userId);
  if (!user?.tokens[current.tokenId]) {
    await revokeOAuthGrant(grantId);
    throw invalidGrant("refresh_token: the API token it was approved with is revoked");
  }
  const next = refreshTokenOf(grantId);
  const rotated = await rotateRefreshToken(current, sha256(next));
  if (!rotated) {
    await revokeOAuthGrant(grantId);
    throw invalidGrant("refresh_token: already used; the grant is revoked");
  }
  return tokenResponse(rotated, next);
}
