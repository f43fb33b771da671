/**
 * The Core API authorizer's decision (spec 5.1, issue 21): the caller of a request is the raw user
 * token in `Authorization` (no `Bearer`), looked up by hash, or else the session cookie of a
 * signed-in browser (lib/domain/accounts.ts). A request that carries `Authorization` is decided by
 * the token alone, whatever cookie it also carries.
 *
 * API Gateway invokes the authorizer (a REQUEST authorizer without result caching and without an
 * identity source: cdk/constructs/core-api-definition.ts) for every request, so this decision is
 * authoritative: a revoked token or session is refused on its next request. It also records use:
 * the token's last use (at most once a minute) and the session's idle expiry (at most once per
 * SESSION_TOUCH_SECONDS).
 */
import type { UserItem } from "#lib/db/entities/user.ts";
import { keys } from "#lib/db/keys.ts";
import { batchGet } from "#lib/db/store.ts";
import { sessionFromCookie } from "./accounts.ts";
import { coreApiRateLimitWithOverrides } from "./feature-overrides.ts";
import { resolveToken } from "./tokens.ts";
import { getUser, userClientIds } from "./users.ts";

export interface AuthorizerContext {
  userId: string;
  tokenId: string;
  rateLimitPerMinute: number;
  systemAdmin: boolean;
}

/** How a Core API request was authenticated: its API token, or a browser's session cookie. */
export type AuthMethod = "token" | "session";

/**
 * The authorizer's context for one request: the caller, how it was authenticated, and (for a
 * session) the session's id. A session caller has no token: `tokenId` is "" (its rate window is
 * the user's, lib/api/dispatch.ts).
 */
export interface RequestCaller extends AuthorizerContext {
  authMethod: AuthMethod;
  /** The session's id for a session caller; "" for a token. */
  sessionId: string;
}

/**
 * The caller behind a token, or undefined (-> 401). `stampUse` records the token's last use
 * (lib/domain/tokens.ts `resolveToken`).
 */
export async function authenticate(
  authorization: string | undefined,
  options: { stampUse?: boolean } = {},
): Promise<AuthorizerContext | undefined> {
  const raw = authorization?.trim();
  if (!raw) return undefined;
  const token = await resolveToken(raw, options);
  if (!token) return undefined;
  const user = await getUser(token.userId);
  if (!user) return undefined;
  return callerOf(user, token.tokenId);
}

/**
 * The caller of a Core API request from its `Authorization` and `Cookie` headers, or undefined
 * (-> 401). A non-empty `Authorization` decides alone (an invalid token is a 401 even with a valid
 * session cookie); without one, the session cookie. Both stamp their use.
 */
export async function authenticateRequest(headers: {
  authorization?: string | undefined;
  cookie?: string | undefined;
}): Promise<RequestCaller | undefined> {
  if (headers.authorization?.trim()) {
    const caller = await authenticate(headers.authorization, { stampUse: true });
    return caller && { ...caller, authMethod: "token", sessionId: "" };
  }
  const signedIn = await sessionFromCookie(headers.cookie);
  if (!signedIn) return undefined;
  const caller = await callerOf(signedIn.user, "");
  return { ...caller, authMethod: "session", sessionId: signedIn.session.sessionId };
}

/**
 * The caller's context from the user and the API token used (the raw token here, or the one an
 * OAuth grant is bound to: lib/oauth/access-tokens.ts), so both credentials give the same caller.
 */
export async function callerOf(user: UserItem, tokenId: string): Promise<AuthorizerContext> {
  const configs = await batchGet(userClientIds(user).map((clientId) => keys.clientConfig(clientId)));
  return {
    userId: user.userId,
    tokenId,
    // The plans with their feature overrides (`core_api_rate_limit_x10`, docs/billing.md).
    rateLimitPerMinute: coreApiRateLimitWithOverrides(configs),
    systemAdmin: user.systemAdmin,
  };
}

/**
 * One request header by name, case-insensitively, from a REST event's `headers` and
 * `multiValueHeaders` (API Gateway keeps the client's spelling). Repeated `Cookie` headers (HTTP/2
 * may split them) are joined with "; ", other repeated headers with ", ".
 */
export function requestHeader(
  event: {
    headers?: Record<string, string | undefined> | null;
    multiValueHeaders?: Record<string, string[] | undefined> | null;
  },
  name: string,
): string | undefined {
  const wanted = name.toLowerCase();
  const values: string[] = [];
  for (const [key, list] of Object.entries(event.multiValueHeaders ?? {}))
    if (key.toLowerCase() === wanted && list) values.push(...list);
  if (values.length === 0)
    for (const [key, value] of Object.entries(event.headers ?? {}))
      if (key.toLowerCase() === wanted && value !== undefined) values.push(value);
  if (values.length === 0) return undefined;
  return values.join(wanted === "cookie" ? "; " : ", ");
}

/** `arn:aws:execute-api:region:account:apiId/stage/METHOD/path` -> the same ARN for every route of the stage. */
export function stageWideArn(methodArn: string): string {
  // The API id is part of the first segment ("...:account:apiId"), the stage the second.
  // Only a full method ARN (with a method segment after the stage) is widened.
  const [prefixAndApiId, stage, method] = methodArn.split("/");
  return prefixAndApiId && stage && method !== undefined ? `${prefixAndApiId}/${stage}/*/*` : methodArn;
}
