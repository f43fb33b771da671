/**
 * An OAuth grant of the MCP endpoint (docs/mcp-oauth.md): what one approved authorization code
 * issued. It holds the SHA-256 of the current refresh token (rotated by a conditional write, so an
 * old refresh token is refused) and binds every token it issues to the user's API token id. Access
 * tokens carry the grant id: deleting the grant revokes them too. Home table, TTL-bound (sliding:
 * each rotation sets it again). Each refresh token rotated away leaves a marker item (its SHA-256,
 * in the grant's partition, until the token would have expired): only a token that is one of them
 * is a replay that revokes the grant; any other token for the grant id (which every access token
 * shows) is merely unknown.
 */
import * as z from "zod/mini";
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from "#lib/aws/document-client.ts";
import { keys } from "#lib/db/keys.ts";
import {
  batchDelete,
  batchGet,
  homeDb,
  isConditionalCheckFailure,
  isExpired,
  nowIso,
  nowSeconds,
  parseStored,
  queryPartition,
  tableName,
} from "#lib/db/store.ts";
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

export const oauthGrantKeys = {
  item: keys.oauthGrant,
  rotated: keys.oauthRotatedRefresh,
  /** The grant's reference under its user (`USER#<id>` / `OAUTHGRANT#<grantId>`). */
  ofUser: keys.userOAuthGrant,
} as const;

/**
 * The reference of a grant under its user: how a password reset, a password change or a deletion
 * finds the user's grants (docs/accounts.md#recovery-ends-every-way-in). Its TTL follows the grant's (set again by each rotation), so
 * it lives as long as the grant may.
 */
export const userGrantRefOf = (grant: Pick<OAuthGrantItem, "userId" | "grantId" | "TTL">) => ({
  ...oauthGrantKeys.ofUser(grant.userId, grant.grantId),
  entity: "userOAuthGrant",
  userId: grant.userId,
  grantId: grant.grantId,
  TTL: grant.TTL,
});

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
 * Rotate the refresh token: first record the current one as rotated (a marker until it would have
 * expired, `grant.TTL`), then the grant takes `nextHash` only while it still holds the current hash
 * (and has not expired), so of two uses of one refresh token exactly one wins (one conditional
 * UpdateItem, no transaction that two racers could both lose). Undefined when the condition failed.
 * The marker goes first so that a rotated token always has one; a marker whose update then failed
 * is harmless: the grant's own hash is compared before the markers are read.
 */
export async function rotateRefreshToken(
  grant: OAuthGrantItem,
  nextHash: string,
): Promise<OAuthGrantItem | undefined> {
  const currentHash = grant.refreshHash;
  await homeDb().send(
    new PutCommand({
      TableName: tableName(),
      Item: {
        ...oauthGrantKeys.rotated(grant.grantId, currentHash),
        entity: "oauthRotatedRefresh",
        grantId: grant.grantId,
        rotatedAt: nowIso(),
        TTL: grant.TTL,
      },
    }),
  );
  const now = nowSeconds();
  try {
    const result = await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: oauthGrantKeys.item(grant.grantId),
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
    const rotated = result.Attributes ? oauthGrantItemOf(result.Attributes) : undefined;
    // The user's reference lives as long as the grant. An unconditional put: a reference a
    // concurrent revocation deleted comes back only for a grant that is dead anyway (its API token
    // is gone), and the next revocation deletes it again.
    if (rotated)
      await homeDb().send(new PutCommand({ TableName: tableName(), Item: userGrantRefOf(rotated) }));
    return rotated;
  } catch (error) {
    if (isConditionalCheckFailure(error)) return undefined;
    throw error;
  }
}

/**
 * Access pattern "rotated refresh token of a grant": whether `tokenHash` is a refresh token the
 * grant issued and rotated away (a consistent GetItem; an expired marker reads as none).
 */
export async function wasRotatedRefreshToken(grantId: string, tokenHash: string): Promise<boolean> {
  const result = await homeDb().send(
    new GetCommand({
      TableName: tableName(),
      Key: oauthGrantKeys.rotated(grantId, tokenHash),
      ConsistentRead: true,
    }),
  );
  return result.Item !== undefined && !isExpired(result.Item);
}

/** Revoke a grant: its refresh token and every access token it issued (idempotent). */
export async function revokeOAuthGrant(grantId: string): Promise<void> {
  await homeDb().send(new DeleteCommand({ TableName: tableName(), Key: oauthGrantKeys.item(grantId) }));
}

/**
 * Revoke every grant of a user (a password reset or change, a deletion: docs/accounts.md#recovery-ends-every-way-in): the grants its
 * references under the user name, and the references. Answers how many grants were alive (an
 * expired grant or a dangling reference is cleaned up, not counted). Idempotent: run again after a
 * failure, it deletes what is left.
 */
export async function revokeGrantsOfUser(userId: string): Promise<number> {
  // Access pattern "OAuth grants of a user": a consistent Query of the user's partition, `OAUTHGRANT#`.
  const refs = await queryPartition(keys.user(userId).pKey, {
    sKeyPrefix: "OAUTHGRANT#",
    consistent: true,
    max: 10_000,
  });
  if (refs.length === 0) return 0;
  const grantKeys = refs.map((ref) => oauthGrantKeys.item(String(ref.grantId)));
  const live = (await batchGet(grantKeys)).filter((item) => !isExpired(item) && item.userId === userId);
  // The grants first, then their references: a failure between leaves references to retry with.
  await batchDelete(grantKeys);
  await batchDelete(refs.map((ref) => ({ pKey: String(ref.pKey), sKey: String(ref.sKey) })));
  return live.length;
}
