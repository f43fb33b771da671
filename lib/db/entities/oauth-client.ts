/**
 * A client of the MCP endpoint's OAuth authorization server (docs/mcp-oauth.md), registered
 * dynamically (RFC 7591) by anyone: public clients only (no secret). Home table, TTL-bound: a
 * registration no user approved expires a day after it was made (the domain sets that TTL and
 * counts it as pending in the hour bucket `pendingBucket`); the first approval takes it out of the
 * pending count, and each approval keeps it OAUTH_CLIENT_TTL_SECONDS more, so anonymous
 * registrations do not pile up. The pending counters (one fixed-window counter item per hour of
 * registration, `keys.rateWindow("OAUTHPENDING", hourStart)`, TTL-bound) are this module's too.
 */
import * as z from "zod/mini";
import { GetCommand, PutCommand, UpdateCommand } from "#lib/aws/document-client.ts";
import { keys } from "#lib/db/keys.ts";
import {
  batchGet,
  homeDb,
  isConditionalCheckFailure,
  isExpired,
  nowIso,
  nowSeconds,
  parseStored,
  tableName,
} from "#lib/db/store.ts";

/** 180 days after the last authorization. */
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
  /** Set while no user has approved the client: the hour bucket (ms) it is counted in as pending. */
  pendingBucket: z.optional(z.int()),
  /** The first approval. */
  approvedAt: z.optional(z.string()),
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

/**
 * Keep a client that was just used to authorize for another OAUTH_CLIENT_TTL_SECONDS, and mark it
 * approved. Undefined when it is gone (or expired); else the pending bucket it was counted in when
 * this was its first approval (the caller releases that place), or undefined in `pendingBucket`.
 */
export async function extendOAuthClient(clientId: string): Promise<{ pendingBucket?: number } | undefined> {
  const now = nowSeconds();
  try {
    const result = await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: oauthClientKeys.item(clientId),
        UpdateExpression: "SET #ttl = :ttl, approvedAt = if_not_exists(approvedAt, :at) REMOVE pendingBucket",
        ConditionExpression: "attribute_exists(pKey) AND #ttl > :now",
        ExpressionAttributeNames: { "#ttl": "TTL" },
        ExpressionAttributeValues: { ":ttl": now + OAUTH_CLIENT_TTL_SECONDS, ":now": now, ":at": nowIso() },
        ReturnValues: "ALL_OLD",
      }),
    );
    const bucket = result.Attributes?.pendingBucket;
    return { pendingBucket: typeof bucket === "number" ? bucket : undefined };
  } catch (error) {
    if (isConditionalCheckFailure(error)) return undefined;
    throw error;
  }
}

// ---- pending clients: one counter per hour of registration ----

/** The counter of the clients registered in the hour starting at `bucketStart` (ms) and still pending. */
const pendingCounterKey = (bucketStart: number) => keys.rateWindow("OAUTHPENDING", bucketStart);

const PendingCounter = z.object({ pKey: z.string(), sKey: z.string(), pending: z.number() });

/**
 * Access pattern "pending OAuth clients per hour": the counts of the given hour buckets (one
 * BatchGetItem); a missing or expired bucket counts 0.
 */
export async function countPendingClients(bucketStarts: readonly number[]): Promise<Map<number, number>> {
  const items = await batchGet(bucketStarts.map((bucket) => pendingCounterKey(bucket)));
  const counts = new Map<number, number>(bucketStarts.map((bucket) => [bucket, 0]));
  for (const item of items) {
    if (isExpired(item)) continue;
    const counter = parseStored(PendingCounter, "OAuth pending clients", item);
    counts.set(Number(counter.sKey), counter.pending);
  }
  return counts;
}

/**
 * Count one more pending client in `bucketStart`'s counter while it holds fewer than `room` (one
 * conditional ADD: racing registrations are serialised, and the one that would exceed fails).
 * False when there is no room.
 */
export async function claimPendingClientPlace(
  bucketStart: number,
  room: number,
  ttl: number,
): Promise<boolean> {
  if (room <= 0) return false;
  try {
    await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: pendingCounterKey(bucketStart),
        UpdateExpression: "ADD pending :one SET entity = :entity, #ttl = if_not_exists(#ttl, :ttl)",
        ConditionExpression: "attribute_not_exists(pending) OR pending < :room",
        ExpressionAttributeNames: { "#ttl": "TTL" },
        ExpressionAttributeValues: {
          ":one": 1,
          ":room": room,
          ":ttl": ttl,
          ":entity": "oauthPendingClients",
        },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionalCheckFailure(error)) return false;
    throw error;
  }
}

/** A pending client was approved (or its registration failed): one place fewer in its bucket, if the bucket is still there. */
export async function releasePendingClientPlace(bucketStart: number): Promise<void> {
  try {
    await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: pendingCounterKey(bucketStart),
        UpdateExpression: "ADD pending :minusOne",
        ConditionExpression: "attribute_exists(pKey) AND pending > :zero",
        ExpressionAttributeValues: { ":minusOne": -1, ":zero": 0 },
      }),
    );
  } catch (error) {
    if (!isConditionalCheckFailure(error)) throw error;
  }
}
