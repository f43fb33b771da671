/**
 * User API tokens (spec 5.1): `u-` followed by 32 random bytes (base64url). Only the SHA-256 of a
 * token is stored; the raw value is shown once, when it is issued. The user record keeps a masked
 * form for display (`userTokens`), which deliberately hardens the spec: it never returns raw tokens.
 */
import { createHash, randomBytes } from "node:crypto";
import { findTokenByHash, type StoredTokenRef, type TokenItem, tokenKeys } from "#lib/db/entities/token.ts";
import { findUser, userKeys } from "#lib/db/entities/user.ts";
import { commitSteps, nowIso, type TransactionStep, tableName } from "#lib/db/store.ts";
import { badRequest, notFound } from "#lib/shared/errors.ts";

export type { StoredTokenRef };

export const TOKEN_PREFIX = "u-";
export const MAX_TOKENS_PER_USER = 10;

export const hashToken = (raw: string) => createHash("sha256").update(raw, "utf8").digest("hex");

export const maskToken = (raw: string) => `${TOKEN_PREFIX}…${raw.slice(-4)}`;

/** Shape check before any store access: cheap rejection of garbage in the authorizer. */
export const looksLikeToken = (raw: string) => /^u-[A-Za-z0-9_-]{43,128}$/.test(raw);

export function generateToken() {
  const raw = `${TOKEN_PREFIX}${randomBytes(32).toString("base64url")}`;
  return {
    raw,
    hash: hashToken(raw),
    masked: maskToken(raw),
    tokenId: `tok_${randomBytes(8).toString("hex")}`,
  };
}

/** Issue a new token for a user. Returns the raw token: the only time it is ever visible. */
export async function issueToken(
  userId: string,
): Promise<{ token: string; tokenId: string; masked: string }> {
  const token = generateToken();
  const createdAt = nowIso();
  const tokenItem: TokenItem = {
    ...tokenKeys.item(token.hash),
    entity: "token",
    userId,
    tokenId: token.tokenId,
    createdAt,
  };
  const ref: StoredTokenRef = { hash: token.hash, masked: token.masked, createdAt };
  const steps: TransactionStep[] = [
    {
      name: "put token",
      action: {
        Put: { TableName: tableName(), Item: tokenItem, ConditionExpression: "attribute_not_exists(pKey)" },
      },
    },
    {
      name: "add to user",
      action: {
        Update: {
          TableName: tableName(),
          Key: userKeys.item(userId),
          UpdateExpression: "SET tokens.#id = :ref",
          ConditionExpression: "attribute_exists(pKey) AND size(tokens) < :max",
          ExpressionAttributeNames: { "#id": token.tokenId },
          ExpressionAttributeValues: { ":ref": ref, ":max": MAX_TOKENS_PER_USER },
        },
      },
    },
  ];
  const refused = await commitSteps(steps, {
    cancelled: ({ failed }) => (failed.includes("add to user") ? ("add to user" as const) : undefined),
  });
  if (refused) {
    if (!(await findUser(userId))) throw notFound("User not found");
    throw badRequest(`A user can hold at most ${MAX_TOKENS_PER_USER} tokens; revoke one first`);
  }
  return { token: token.raw, tokenId: token.tokenId, masked: token.masked };
}

export async function revokeToken(userId: string, tokenId: string): Promise<void> {
  const user = await findUser(userId);
  const ref = user?.tokens[tokenId];
  if (!ref) throw notFound("Token not found");
  const steps: TransactionStep[] = [
    { name: "delete token", action: { Delete: { TableName: tableName(), Key: tokenKeys.item(ref.hash) } } },
    {
      name: "remove from user",
      action: {
        Update: {
          TableName: tableName(),
          Key: userKeys.item(userId),
          UpdateExpression: "REMOVE tokens.#id",
          ExpressionAttributeNames: { "#id": tokenId },
        },
      },
    },
  ];
  await commitSteps(steps);
}

/** The authorizer's look-up: token -> owning user, or undefined for an unknown token. */
export async function resolveToken(raw: string): Promise<{ userId: string; tokenId: string } | undefined> {
  if (!looksLikeToken(raw)) return undefined;
  const token = await findTokenByHash(hashToken(raw));
  return token ? { userId: token.userId, tokenId: token.tokenId } : undefined;
}

export function listTokens(tokens: Record<string, StoredTokenRef> | undefined) {
  return Object.entries(tokens ?? {})
    .map(([tokenId, ref]) => ({ tokenId, masked: ref.masked, createdAt: ref.createdAt }))
    .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
}
