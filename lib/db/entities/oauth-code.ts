/**
 * An authorization code of the MCP endpoint's OAuth server (docs/mcp-oauth.md), stored by its
 * SHA-256 (the raw code only travels in the redirect). Single use: redeeming it marks it redeemed
 * and creates the grant in one transaction, conditioned on it not being redeemed yet; a redeemed
 * code is kept (until its TTL) so that a second use can revoke the grant the first one issued.
 */
import * as z from "zod/mini";
import { GetCommand, PutCommand } from "#lib/aws/document-client.ts";
import { keys } from "#lib/db/keys.ts";
import {
  commitSteps,
  homeDb,
  isExpired,
  nowIso,
  parseStored,
  type TransactionStep,
  tableName,
} from "#lib/db/store.ts";
import { type OAuthGrantItem, oauthGrantKeys, userGrantRefOf } from "./oauth-grant.ts";

/** An authorization code is good for 60 seconds. */
export const AUTHORIZATION_CODE_TTL_SECONDS = 60;

export const OAuthCodeItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("oauthCode"),
  clientId: z.string(),
  redirectUri: z.string(),
  /** The PKCE S256 challenge the code was issued for. */
  codeChallenge: z.string(),
  resource: z.string(),
  userId: z.string(),
  /** The user's API token that approved the request. */
  tokenId: z.string(),
  createdAt: z.string(),
  TTL: z.int(),
  /** Set by the redemption, with the grant it created. */
  redeemedAt: z.optional(z.string()),
  grantId: z.optional(z.string()),
});
export type OAuthCodeItem = z.infer<typeof OAuthCodeItem>;

export const oauthCodeItemOf = (item: Record<string, unknown>): OAuthCodeItem =>
  parseStored(OAuthCodeItem, "OAuth authorization code", item);

export const oauthCodeKeys = { item: keys.oauthCode } as const;

export async function putAuthorizationCode(item: OAuthCodeItem): Promise<void> {
  await homeDb().send(
    new PutCommand({ TableName: tableName(), Item: item, ConditionExpression: "attribute_not_exists(pKey)" }),
  );
}

/**
 * Access pattern "authorization code by hash": a consistent GetItem. An expired code reads as none
 * unless it was redeemed: a redeemed one is evidence of reuse, acted on until DynamoDB deletes it.
 */
export async function findAuthorizationCode(codeHash: string): Promise<OAuthCodeItem | undefined> {
  const result = await homeDb().send(
    new GetCommand({ TableName: tableName(), Key: oauthCodeKeys.item(codeHash), ConsistentRead: true }),
  );
  const item = result.Item;
  if (!item || (isExpired(item) && item.redeemedAt === undefined)) return undefined;
  return oauthCodeItemOf(item);
}

/**
 * Redeem a code for a new grant, in one transaction of named steps: `redeem code` (conditioned on
 * the code existing and not being redeemed yet: the single-use decision), `put grant` and `index
 * grant` (its reference under the user, by which a reset or a deletion finds it). False when the
 * code was redeemed first by someone else.
 */
export async function redeemAuthorizationCode(code: OAuthCodeItem, grant: OAuthGrantItem): Promise<boolean> {
  const steps: TransactionStep[] = [
    {
      name: "redeem code",
      action: {
        Update: {
          TableName: tableName(),
          Key: { pKey: code.pKey, sKey: code.sKey },
          UpdateExpression: "SET redeemedAt = :at, grantId = :grant",
          ConditionExpression: "attribute_exists(pKey) AND attribute_not_exists(redeemedAt)",
          ExpressionAttributeValues: { ":at": nowIso(), ":grant": grant.grantId },
        },
      },
    },
    {
      name: "put grant",
      action: {
        Put: {
          TableName: tableName(),
          Item: { ...grant, ...oauthGrantKeys.item(grant.grantId) },
          ConditionExpression: "attribute_not_exists(pKey)",
        },
      },
    },
    { name: "index grant", action: { Put: { TableName: tableName(), Item: userGrantRefOf(grant) } } },
  ];
  // Another redemption of the same code (committed, or racing this one) decides it: this one lost.
  const lost = await commitSteps(steps, {
    cancelled: ({ failed, conflict }) =>
      failed.includes("redeem code") || conflict ? ("lost" as const) : undefined,
  });
  return lost === undefined;
}
