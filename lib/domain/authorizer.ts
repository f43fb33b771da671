/**
 * The Core API authorizer's decision (spec 5.1): the raw user token in `Authorization` (no
 * `Bearer`), looked up by hash. API Gateway caches the decision per token for the configured TTL,
 * so the policy allows every route of the stage and the context carries what handlers need. The
 * cache does not keep a revoked token alive: the Core API dispatcher looks the presented token up
 * again on every request (lib/api/dispatch.ts `admitPresentedToken`).
 */
import type { UserItem } from "#lib/db/entities/user.ts";
import { keys } from "#lib/db/keys.ts";
import { batchGet } from "#lib/db/store.ts";
import { coreApiRateLimit } from "./plans.ts";
import { resolveToken } from "./tokens.ts";
import { getUser, userClientIds } from "./users.ts";

export interface AuthorizerContext {
  userId: string;
  tokenId: string;
  rateLimitPerMinute: number;
  systemAdmin: boolean;
}

/**
 * The caller behind a token, or undefined (-> 401). `stampUse` records the token's last use
 * (lib/domain/tokens.ts `resolveToken`); the authorizer Lambda, which only reads, leaves it off.
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
 * The caller's context from the user and the API token used (the raw token here, or the one an
 * OAuth grant is bound to: lib/oauth/access-tokens.ts), so both credentials give the same caller.
 */
export async function callerOf(user: UserItem, tokenId: string): Promise<AuthorizerContext> {
  const configs = await batchGet(userClientIds(user).map((clientId) => keys.clientConfig(clientId)));
  return {
    userId: user.userId,
    tokenId,
    rateLimitPerMinute: coreApiRateLimit(configs),
    systemAdmin: user.systemAdmin,
  };
}

/** `arn:aws:execute-api:region:account:apiId/stage/METHOD/path` -> the same ARN for every route of the stage. */
export function stageWideArn(methodArn: string): string {
  // The API id is part of the first segment ("...:account:apiId"), the stage the second.
  // Only a full method ARN (with a method segment after the stage) is widened.
  const [prefixAndApiId, stage, method] = methodArn.split("/");
  return prefixAndApiId && stage && method !== undefined ? `${prefixAndApiId}/${stage}/*/*` : methodArn;
}
