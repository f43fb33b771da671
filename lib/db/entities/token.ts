/**
 * The user API token (spec 5.1) as stored: the token item, addressed by the SHA-256 of the raw
 * token, and the token reference kept in the owning user's `tokens` map (lib/db/entities/user.ts).
 * The domain (lib/domain/tokens.ts) works on these types, never on an untyped item.
 */
import { z } from "zod";
import { GetCommand, UpdateCommand } from "#lib/aws/document-client.ts";
import { keys } from "#lib/db/keys.ts";
import { batchGet, homeDb, isConditionalCheckFailure, parseStored, tableName } from "#lib/db/store.ts";

export const TokenItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("token"),
  /** The owning user. */
  userId: z.string(),
  tokenId: z.string(),
  createdAt: z.string(),
  /**
   * When the token was last accepted (ISO 8601), stamped at most once a minute per token: only
   * when the stored stamp is older than a minute (lib/domain/tokens.ts `resolveToken`).
   */
  tokenLastUsed: z.string().optional(),
});
export type TokenItem = z.infer<typeof TokenItem>;

/** One entry of the user item's `tokens` map (keyed by token id): never the raw token. */
export const StoredTokenRef = z.object({
  /** SHA-256 of the raw token: the token item's key. */
  hash: z.string(),
  /** What the API shows (`userTokens`): the prefix and the last four characters. */
  masked: z.string(),
  createdAt: z.string(),
  /** The name its owner gave it (tokens issued before names existed have none). */
  name: z.string().default(""),
});
export type StoredTokenRef = z.infer<typeof StoredTokenRef>;

/** A stored item as a TokenItem; an item that is not one is a defect of the store, not of the caller. */
export const tokenItemOf = (item: Record<string, unknown>): TokenItem =>
  parseStored(TokenItem, "token", { entity: "token", ...item });

export const tokenKeys = {
  /** The token item, by the SHA-256 of the raw token. */
  item: keys.userToken,
} as const;

/**
 * Access pattern "token -> user (the authorizer, and the dispatcher's revocation check)": a
 * consistent GetItem on the token's hash.
 */
export async function findTokenByHash(tokenHash: string): Promise<TokenItem | undefined> {
  const result = await homeDb().send(
    new GetCommand({ TableName: tableName(), Key: tokenKeys.item(tokenHash), ConsistentRead: true }),
  );
  return result.Item ? tokenItemOf(result.Item) : undefined;
}

/** Access pattern "the tokens of a user, for their last use": one consistent BatchGetItem by hash. */
export async function findTokensByHash(tokenHashes: readonly string[]): Promise<TokenItem[]> {
  const items = await batchGet(tokenHashes.map((hash) => tokenKeys.item(hash)));
  return items.map(tokenItemOf);
}

/**
 * Stamps a token's last use, only when the stored stamp is older than `staleBefore` (or absent),
 * and only while the token exists (a revoked token is not written back as a partial item). Answers
 * whether it wrote: concurrent requests race on the condition and one of them wins.
 */
export async function stampTokenLastUsed(
  tokenHash: string,
  at: string,
  staleBefore: string,
): Promise<boolean> {
  try {
    await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: tokenKeys.item(tokenHash),
        UpdateExpression: "SET tokenLastUsed = :at",
        ConditionExpression:
          "attribute_exists(pKey) AND (attribute_not_exists(tokenLastUsed) OR tokenLastUsed < :stale)",
        ExpressionAttributeValues: { ":at": at, ":stale": staleBefore },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionalCheckFailure(error)) return false;
    throw error;
  }
}
