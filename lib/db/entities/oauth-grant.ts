/**
 * An OAuth grant of the MCP endpoint (docs/mcp-oauth.md): what one approved authorization code
 * issued. It holds the SHA-256 of the current refresh token (rotated by a conditional write, so an
 * old refresh token is refused) and binds every token it issues to the user's API token id. Access
 * tokens carry the grant id: deleting the grant revokes them too. Home table, TTL-bound (sliding:
 * each rotation sets it again).
 */
import * as z from "zod/mini";
import { DeleteCommand, GetCommand, UpdateCommand } from "../document-client.ts";
import { keys } from "../keys.ts";
import {
  batchGet,
  homeDb,
  isConditionalCheckFailure,
  isExpired,
  nowIso,
  nowSeconds,
  parseStored,
  tableName,
} from "../store.ts";
import { type UserItem, userItemOf } from "./user.ts";

/** A refresh token lives 30 days after it was issued; using it issues the next one. */
export const REFRESH_TOKEN_TTL_SECONDS = 30 * 24 * 3600;

export const OAuthGrantItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("oauthGrant"),
  grantId: z.string(),
  /** The OAuth client the grant was issued to. */
  clientId: z.string(),
  userId: z.string(),
  /** The user's API token the grant was approved with: revoking it revokes the grant. */
  tokenId: z.string(),
  /** The MCP resource (RFC 8707) the access tokens are for. */
  resource: z.string(),
  /** SHA-256 (hex) of the current refresh token. */
  refreshHash: z.string(),
  createdAt: z.string(),
  rotatedAt: z.string(),
  TTL: z.int(),
});
export type OAuthGrantItem = z.infer<typeof OAuthGrantItem>;

export const oauthGrantItemOf = (item: Record<string, unknown>): OAuthGrantItem =>
  parseStored(OAuthGrantItem, "OAuth grant", item);

export const oauthGrantKeys = { item: keys.oauthGrant } as const;

/** Access pattern "OAuth grant by id": a consistent GetItem; an expired grant reads as none. */
export async function findOAuthGrant(grantId: string): Promise<OAuthGrantItem | undefined> {
  const result = await homeDb().send(
    new GetCommand({ TableName: tableName(), Key: oauthGrantKeys.item(grantId), ConsistentRead: true }),
  );
  return result.Item && !isExpired(result.Item) ? oauthGrantItemOf(result.Item) : undefined;
}

/**
 * Access pattern "access token -> grant and user" (verification of every MCP request with an OAuth
 * access token): one BatchGetItem of the grant and the user. An expired grant reads as none.
 */
export async function findGrantWithUser(
  grantId: string,
  userId: string,
): Promise<{ grant?: OAuthGrantItem; user?: UserItem }> {
  const grantKey = oauthGrantKeys.item(grantId);
  const userKey = keys.user(userId);
  const items = await batchGet([grantKey, userKey]);
  const withKey = (key: { pKey: string; sKey: string }) =>
    items.find((item) => item.pKey === key.pKey && item.sKey === key.sKey);
  const grantItem = withKey(grantKey);
  const userItem = withKey(userKey);
  return {
    grant: grantItem && !isExpired(grantItem) ? oauthGrantItemOf(grantItem) : undefined,
    user: userItem ? userItemOf(userItem) : undefined,
  };
}

/**
 * Rotate the refresh token: the grant takes `nextHash` only while it still holds `currentHash`
 * (and has not expired), so of two uses of one refresh token exactly one wins. Undefined when the
 * condition failed.
 */
export async function rotateRefreshToken(
  grantId: string,
  currentHash: string,
  nextHash: string,
): Promise<OAuthGrantItem | undefined> {
  const now = nowSeconds();
  try {
    const result = await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: oauthGrantKeys.item(grantId),
        UpdateExpression: "SET refreshHash = :next, rotatedAt = :at, #ttl = :ttl",
        ConditionExpression: "attribute_exists(pKey) AND refreshHash = :current AND #ttl > :now",
        ExpressionAttributeNames: { "#ttl": "TTL" },
        ExpressionAttributeValues: {
          ":next": nextHash,
          ":current": currentHash,
          ":at": nowIso(),
          ":ttl": now + REFRESH_TOKEN_TTL_SECONDS,
          ":now": now,
        },
        ReturnValues: "ALL_NEW",
      }),
    );
    return result.Attributes ? oauthGrantItemOf(result.Attributes) : undefined;
  } catch (error) {
    if (isConditionalCheckFailure(error)) return undefined;
    throw error;
  }
}

/** Revoke a grant: its refresh token and every access token it issued (idempotent). */
export async function revokeOAuthGrant(grantId: string): Promise<void> {
  await homeDb().send(new DeleteCommand({ TableName: tableName(), Key: oauthGrantKeys.item(grantId) }));
}
