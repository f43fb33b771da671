/**
 * The MCP endpoint's OAuth access tokens (docs/mcp-oauth.md): JWTs (RFC 9068 `at+jwt`), ES256,
 * signed in KMS (lib/oauth/signing.ts), one hour long. `aud` is the MCP resource, `iss` its
 * origin, `sub` the user id; `api_token_id` is the user's API token the grant is bound to and
 * `grant_id` the grant. Verification checks the signature and claims, then the grant and the API
 * token are still alive (one BatchGetItem of the grant and the user), then builds the caller as
 * the raw-token path does (lib/domain/authorizer.ts callerOf).
 */
import { randomBytes } from "node:crypto";
import { errors, jwtVerify } from "jose";
import { findGrantWithUser } from "#lib/db/entities/oauth-grant.ts";
import { nowSeconds } from "#lib/db/store.ts";
import { type AuthorizerContext, callerOf } from "#lib/domain/authorizer.ts";
import { issuerOfResource } from "./metadata.ts";
import { JWT_ALGORITHM, signingPublicKey, signJwt } from "./signing.ts";

export const ACCESS_TOKEN_TTL_SECONDS = 3600;
export const ACCESS_TOKEN_TYPE = "at+jwt";
/** Clock skew allowed between the signer and the verifier (seconds). */
const CLOCK_TOLERANCE_SECONDS = 5;

/** The caller an access token stands for: the same shape as the raw-token path's. */
export type Caller = AuthorizerContext;

export interface AccessTokenGrant {
  resource: string;
  userId: string;
  /** The user's API token id the grant is bound to. */
  tokenId: string;
  grantId: string;
  clientId: string;
}

/** Sign an access token for a grant; `issuedAt` (seconds) only for tests of expiry. */
export async function signAccessToken(
  grant: AccessTokenGrant,
  options: { issuedAt?: number } = {},
): Promise<string> {
  const iat = options.issuedAt ?? nowSeconds();
  return signJwt(
    { typ: ACCESS_TOKEN_TYPE },
    {
      iss: issuerOfResource(grant.resource),
      aud: grant.resource,
      sub: grant.userId,
      client_id: grant.clientId,
      api_token_id: grant.tokenId,
      grant_id: grant.grantId,
      iat,
      exp: iat + ACCESS_TOKEN_TTL_SECONDS,
      jti: randomBytes(12).toString("base64url"),
    },
  );
}

/** A JWT's shape, before any crypto: three base64url parts, bounded. */
const looksLikeJwt = (value: string) =>
  value.length <= 4096 && /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(value);

/**
 * The caller behind an access token for `resource`, or undefined (-> 401): a bad signature, a
 * wrong audience or issuer, an expired token, or a grant or API token that was revoked.
 */
export async function verifyAccessToken(jwt: string, resource: string): Promise<Caller | undefined> {
  if (!looksLikeJwt(jwt)) return undefined;
  let claims: Record<string, unknown>;
  try {
    const verified = await jwtVerify(jwt, await signingPublicKey(), {
      algorithms: [JWT_ALGORITHM],
      typ: ACCESS_TOKEN_TYPE,
      audience: resource,
      issuer: issuerOfResource(resource),
      clockTolerance: CLOCK_TOLERANCE_SECONDS,
      maxTokenAge: ACCESS_TOKEN_TTL_SECONDS + CLOCK_TOLERANCE_SECONDS,
      requiredClaims: ["sub", "exp", "iat", "api_token_id", "grant_id"],
    });
    claims = verified.payload;
  } catch (error) {
    if (error instanceof errors.JOSEError) return undefined;
    throw error;
  }
  const { sub: userId, api_token_id: tokenId, grant_id: grantId } = claims;
  if (typeof userId !== "string" || typeof tokenId !== "string" || typeof grantId !== "string")
    return undefined;
  const { grant, user } = await findGrantWithUser(grantId, userId);
  if (!grant || !user) return undefined;
  if (grant.userId !== userId || grant.tokenId !== tokenId || grant.resource !== resource) return undefined;
  // Revoking (or expiring) the API token removes it from the user's tokens: the grant dies with it.
  if (!user.tokens[tokenId]) return undefined;
  return callerOf(user, tokenId);
}
