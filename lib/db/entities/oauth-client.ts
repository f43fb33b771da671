/**
 * A client of the MCP endpoint's OAuth authorization server (docs/mcp-oauth.md), registered
 * dynamically (RFC 7591) by anyone: public clients only (no secret). Home table, TTL-bound: a
 * registration expires OAUTH_CLIENT_TTL_SECONDS after it was last used to authorize, so anonymous
 * registrations do not pile up.
 */
import * as z from "zod/mini";
import { GetCommand, PutCommand, UpdateCommand } from "../document-client.ts";
import { keys } from "../keys.ts";
import {
  homeDb,
  isConditionalCheckFailure,
  isExpired,
  nowSeconds,
  parseStored,
  tableName,
} from "../store.ts";

/** 180 days after registration or the last authorization. */
export const OAUTH_CLIENT_TTL_SECONDS = 180 * 24 * 3600;

export const OAuthClientItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("oauthClient"),
  clientId: z.string(),
  /** Shown on the consent page, marked as the client's own claim. */
  clientName: z.string(),
  /** Exact-match list (lib/oauth/client-metadata.ts). */
  redirectUris: z.array(z.string()),
  createdAt: z.string(),
  TTL: z.int(),
});
export type OAuthClientItem = z.infer<typeof OAuthClientItem>;

export const oauthClientItemOf = (item: Record<string, unknown>): OAuthClientItem =>
  parseStored(OAuthClientItem, "OAuth client", item);

export const oauthClientKeys = { item: keys.oauthClient } as const;

/** Register a client (a new random id: a collision is a defect, so the put is conditional). */
export async function putOAuthClient(item: OAuthClientItem): Promise<void> {
  await homeDb().send(
    new PutCommand({ TableName: tableName(), Item: item, ConditionExpression: "attribute_not_exists(pKey)" }),
  );
}

/** Access pattern "OAuth client by id": a consistent GetItem; an expired registration reads as none. */
export async function findOAuthClient(clientId: string): Promise<OAuthClientItem | undefined> {
  const result = await homeDb().send(
    new GetCommand({ TableName: tableName(), Key: oauthClientKeys.item(clientId), ConsistentRead: true }),
  );
  return result.Item && !isExpired(result.Item) ? oauthClientItemOf(result.Item) : undefined;
}

/** Keep a client that was just used to authorize for another OAUTH_CLIENT_TTL_SECONDS; false when it is gone. */
export async function extendOAuthClient(clientId: string): Promise<boolean> {
  const now = nowSeconds();
  try {
    await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: oauthClientKeys.item(clientId),
        UpdateExpression: "SET #ttl = :ttl",
        ConditionExpression: "attribute_exists(pKey) AND #ttl > :now",
        ExpressionAttributeNames: { "#ttl": "TTL" },
        ExpressionAttributeValues: { ":ttl": now + OAUTH_CLIENT_TTL_SECONDS, ":now": now },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionalCheckFailure(error)) return false;
    throw error;
  }
}
