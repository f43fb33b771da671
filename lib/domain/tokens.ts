/**
 * User API tokens (spec 5.1): `u-` followed by 32 random bytes (base64url). Only the SHA-256 of a
 * token is stored; the raw value is shown once, when it is issued. The user record keeps a masked
 * form for display (`userTokens`), which deliberately hardens the spec: it never returns raw tokens.
 */
import { createHash, randomBytes } from "node:crypto";
import { GetCommand, TransactWriteCommand } from "../db/document-client.ts";
import { keys } from "../db/keys.ts";
import { homeDb, nowIso, tableName, transactionConditionFailedAt } from "../db/store.ts";
import { badRequest, notFound } from "./errors.ts";

export const TOKEN_PREFIX = "u-";
export const MAX_TOKENS_PER_USER = 10;

export interface StoredTokenRef {
  hash: string;
  masked: string;
  createdAt: string;
}

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
  try {
    await homeDb().send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Put: {
              TableName: tableName(),
              Item: {
                ...keys.userToken(token.hash),
                entity: "token",
                userId,
                tokenId: token.tokenId,
                createdAt,
              },
              ConditionExpression: "attribute_not_exists(pKey)",
            },
          },
          {
            Update: {
              TableName: tableName(),
              Key: keys.user(userId),
              UpdateExpression: "SET tokens.#id = :ref",
              ConditionExpression: "attribute_exists(pKey) AND size(tokens) < :max",
              ExpressionAttributeNames: { "#id": token.tokenId },
              ExpressionAttributeValues: {
                ":ref": { hash: token.hash, masked: token.masked, createdAt } satisfies StoredTokenRef,
                ":max": MAX_TOKENS_PER_USER,
              },
            },
          },
        ],
      }),
    );
  } catch (error) {
    if (transactionConditionFailedAt(error, 1)) {
      const user = await homeDb().send(new GetCommand({ TableName: tableName(), Key: keys.user(userId) }));
      if (!user.Item) throw notFound("User not found");
      throw badRequest(`A user can hold at most ${MAX_TOKENS_PER_USER} tokens; revoke one first`);
    }
    throw error;
  }
  return { token: token.raw, tokenId: token.tokenId, masked: token.masked };
}

export async function revokeToken(userId: string, tokenId: string): Promise<void> {
  const user = await homeDb().send(
    new GetCommand({ TableName: tableName(), Key: keys.user(userId), ConsistentRead: true }),
  );
  const ref = (user.Item?.tokens as Record<string, StoredTokenRef> | undefined)?.[tokenId];
  if (!user.Item || !ref) throw notFound("Token not found");
  await homeDb().send(
    new TransactWriteCommand({
      TransactItems: [
        { Delete: { TableName: tableName(), Key: keys.userToken(ref.hash) } },
        {
          Update: {
            TableName: tableName(),
            Key: keys.user(userId),
            UpdateExpression: "REMOVE tokens.#id",
            ExpressionAttributeNames: { "#id": tokenId },
          },
        },
      ],
    }),
  );
}

/** The authorizer's look-up: token -> owning user, or undefined for an unknown token. */
export async function resolveToken(raw: string): Promise<{ userId: string; tokenId: string } | undefined> {
  if (!looksLikeToken(raw)) return undefined;
  const result = await homeDb().send(
    new GetCommand({ TableName: tableName(), Key: keys.userToken(hashToken(raw)), ConsistentRead: true }),
  );
  if (!result.Item) return undefined;
  return { userId: String(result.Item.userId), tokenId: String(result.Item.tokenId) };
}

export function listTokens(tokens: Record<string, StoredTokenRef> | undefined) {
  return Object.entries(tokens ?? {})
    .map(([tokenId, ref]) => ({ tokenId, masked: ref.masked, createdAt: ref.createdAt }))
    .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
}
