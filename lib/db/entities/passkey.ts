/**
 * Passkeys as stored (docs/accounts.md, "Passkeys"), in the user's partition beside the account:
 * - a passkey (`USER#<id>` / `PASSKEY#<sha256(credential id)>`): the credential's public key (COSE),
 *   its signature counter, transports, the name its owner gave it, created and last used;
 * - the user's passkey count (`USER#<id>` / `PASSKEYCOUNT`), moved in the same transaction as each
 *   passkey added or removed, so the cap and the last-way-in rule hold under racing requests.
 * And the challenges of passkey ceremonies (`PASSKEYCHALLENGE#<id>` / `CHALLENGE`): single use
 * (claimed by a conditional delete), 5 minutes, TTL-bound.
 */
import * as z from "zod/mini";
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from "#lib/aws/document-client.ts";
import { type Key, keys } from "#lib/db/keys.ts";
import {
  commitSteps,
  homeDb,
  isConditionalCheckFailure,
  keyOf,
  parseStored,
  queryPartition,
  type TransactionStep,
  tableName,
} from "#lib/db/store.ts";

/** The keys of passkeys (docs/access-patterns.md), here rather than in lib/db/keys.ts: the data plane loads that one at its cold start. */
const key = (pKey: string, sKey: string): Key => ({ pKey, sKey });
export const passkeyKeys = {
  /**
   * A passkey of a user (docs/accounts.md, "Passkeys"), addressed by the SHA-256 (base64url) of its
   * WebAuthn credential id: a credential id may be up to 1023 bytes, more than a sort key holds.
   */
  passkey: (userId: string, credentialHash: string) => key(`USER#${userId}`, `PASSKEY#${credentialHash}`),
  /** How many passkeys a user has: the cap (20) and the last-way-in rule, kept with conditional writes. */
  count: (userId: string) => key(`USER#${userId}`, "PASSKEYCOUNT"),
  /** A passkey ceremony's challenge (registration or sign-in), single use, TTL 5 minutes. */
  challenge: (challengeId: string) => key(`PASSKEYCHALLENGE#${challengeId}`, "CHALLENGE"),
};

export const PasskeyItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("passkey"),
  userId: z.string(),
  /** The WebAuthn credential id, base64url (what the browser names the credential by). */
  credentialId: z.string(),
  /** SHA-256 of the credential id's bytes, base64url: the key's suffix and the passkey's public id. */
  credentialHash: z.string(),
  /** The credential's public key, a COSE key, base64url. */
  publicKey: z.string(),
  /** The authenticator's signature counter as last seen (0 for authenticators that keep none). */
  counter: z.int(),
  transports: z.optional(z.array(z.string())),
  /** `singleDevice` or `multiDevice` (a synced passkey), as the authenticator said at registration. */
  deviceType: z.optional(z.string()),
  backedUp: z.optional(z.boolean()),
  name: z.string(),
  createdAt: z.string(),
  lastUsedAt: z.optional(z.string()),
});
export type PasskeyItem = z.infer<typeof PasskeyItem>;

export type PasskeyPurpose = "registration" | "authentication";

export const PasskeyChallengeItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("passkeyChallenge"),
  challengeId: z.string(),
  purpose: z.enum(["registration", "authentication"]),
  /** The challenge the browser signs, base64url (32 random bytes). */
  challenge: z.string(),
  /** The signed-in user a registration challenge was given to. */
  userId: z.optional(z.string()),
  /** Epoch seconds; refused from then on (the TTL deletes it later). */
  expiresAt: z.int(),
  TTL: z.int(),
});
export type PasskeyChallengeItem = z.infer<typeof PasskeyChallengeItem>;

export const passkeyItemOf = (item: Record<string, unknown>): PasskeyItem =>
  parseStored(PasskeyItem, "passkey", item);
export const passkeyChallengeItemOf = (item: Record<string, unknown>): PasskeyChallengeItem =>
  parseStored(PasskeyChallengeItem, "passkey challenge", item);

export async function putPasskeyChallenge(challenge: PasskeyChallengeItem): Promise<void> {
  await homeDb().send(
    new PutCommand({
      TableName: tableName(),
      Item: challenge,
      ConditionExpression: "attribute_not_exists(pKey)",
    }),
  );
}

/**
 * Access pattern "claim a challenge": a DeleteItem conditioned on the item existing, answering
 * the deleted item (`ALL_OLD`). Of racing claims of one challenge exactly one gets it; the rest
 * (and any claim after) get undefined. The caller checks purpose and expiry (a claimed expired
 * challenge is gone either way).
 */
export async function claimPasskeyChallenge(challengeId: string): Promise<PasskeyChallengeItem | undefined> {
  try {
    const result = await homeDb().send(
      new DeleteCommand({
        TableName: tableName(),
        Key: passkeyKeys.challenge(challengeId),
        ConditionExpression: "attribute_exists(pKey)",
        ReturnValues: "ALL_OLD",
      }),
    );
    return result.Attributes ? passkeyChallengeItemOf(result.Attributes) : undefined;
  } catch (error) {
    if (isConditionalCheckFailure(error)) return undefined;
    throw error;
  }
}

/** Access pattern "passkey of a user by credential" (discoverable sign-in): a consistent GetItem. */
export async function findPasskey(userId: string, credentialHash: string): Promise<PasskeyItem | undefined> {
  const result = await homeDb().send(
    new GetCommand({
      TableName: tableName(),
      Key: passkeyKeys.passkey(userId, credentialHash),
      ConsistentRead: true,
    }),
  );
  return result.Item ? passkeyItemOf(result.Item) : undefined;
}

/** Access pattern "passkeys of a user": a consistent Query of the user's partition, `PASSKEY#` prefix. */
export async function listPasskeys(userId: string): Promise<PasskeyItem[]> {
  const items = await queryPartition(keys.user(userId).pKey, { sKeyPrefix: "PASSKEY#", consistent: true });
  return items.map(passkeyItemOf);
}

/**
 * Store a new passkey, in one transaction with the user's count: `put passkey` (a new credential)
 * and `count passkey` (`ADD passkeyCount 1` while fewer than `max`). "limit" when the user has
 * `max` already, "exists" when the credential is registered already; nothing is written then.
 */
export async function addPasskey(passkey: PasskeyItem, max: number): Promise<"added" | "limit" | "exists"> {
  const steps: TransactionStep[] = [
    {
      name: "put passkey",
      action: {
        Put: { TableName: tableName(), Item: passkey, ConditionExpression: "attribute_not_exists(pKey)" },
      },
    },
    {
      name: "count passkey",
      action: {
        Update: {
          TableName: tableName(),
          Key: passkeyKeys.count(passkey.userId),
          UpdateExpression: "SET entity = :entity, userId = :user ADD passkeyCount :one",
          ConditionExpression: "attribute_not_exists(passkeyCount) OR passkeyCount < :max",
          ExpressionAttributeValues: {
            ":entity": "passkeyCount",
            ":user": passkey.userId,
            ":one": 1,
            ":max": max,
          },
        },
      },
    },
  ];
  const refused = await commitSteps(steps, {
    attempts: 3,
    cancelled: ({ failed }) =>
      failed.includes("put passkey")
        ? ("exists" as const)
        : failed.includes("count passkey")
          ? ("limit" as const)
          : undefined,
  });
  return refused ?? "added";
}

/**
 * Remove a passkey, in one transaction with the user's count, keeping the user a way in: with
 * `hasPassword`, `check password` (the account still has a password hash) and the count's
 * `ADD -1`; without, the count's `ADD -1` only while it is above 1 (another passkey is left).
 * "notFound" when the user has no such passkey, "lastWayIn" when it is the user's last way in.
 */
export async function removePasskey(
  userId: string,
  credentialHash: string,
  options: { hasPassword: boolean },
): Promise<"removed" | "notFound" | "lastWayIn"> {
  const steps: TransactionStep[] = [
    {
      name: "delete passkey",
      action: {
        Delete: {
          TableName: tableName(),
          Key: passkeyKeys.passkey(userId, credentialHash),
          ConditionExpression: "attribute_exists(pKey)",
        },
      },
    },
    {
      name: "uncount passkey",
      action: {
        Update: {
          TableName: tableName(),
          Key: passkeyKeys.count(userId),
          UpdateExpression: "ADD passkeyCount :minus",
          ConditionExpression: options.hasPassword ? "passkeyCount > :zero" : "passkeyCount > :one",
          ExpressionAttributeValues: options.hasPassword
            ? { ":minus": -1, ":zero": 0 }
            : { ":minus": -1, ":one": 1 },
        },
      },
    },
    ...(options.hasPassword
      ? [
          {
            name: "check password",
            action: {
              ConditionCheck: {
                TableName: tableName(),
                Key: keys.userAccount(userId),
                ConditionExpression: "attribute_exists(passwordHash)",
              },
            },
          },
        ]
      : []),
  ];
  const refused = await commitSteps(steps, {
    attempts: 3,
    cancelled: ({ failed }) =>
      failed.includes("delete passkey")
        ? ("notFound" as const)
        : failed.length > 0
          ? ("lastWayIn" as const)
          : undefined,
  });
  return refused ?? "removed";
}

/**
 * Record a sign-in with a passkey: the new signature counter and the time, conditioned on the
 * counter moving forward (or staying 0 for an authenticator that keeps none). False when another
 * sign-in got there first or the passkey was removed meanwhile.
 */
export async function recordPasskeyUse(
  passkey: PasskeyItem,
  newCounter: number,
  usedAt: string,
): Promise<boolean> {
  try {
    await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keyOf(passkey),
        UpdateExpression: "SET #counter = :new, lastUsedAt = :used",
        ConditionExpression:
          newCounter === 0
            ? "attribute_exists(pKey) AND #counter = :new"
            : "attribute_exists(pKey) AND #counter < :new",
        ExpressionAttributeNames: { "#counter": "counter" },
        ExpressionAttributeValues: { ":new": newCounter, ":used": usedAt },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionalCheckFailure(error)) return false;
    throw error;
  }
}
