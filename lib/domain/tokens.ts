/**
 * User API tokens (spec 5.1): `u-` followed by 32 random bytes (base64url). Only the SHA-256 of a
 * token is stored; the raw value is shown once, when it is issued. The user record keeps a masked
 * form for display (`userTokens`, `tokenPreview`), which deliberately hardens the spec: it never
 * returns raw tokens.
 *
 * A user manages their own tokens through the Core API (lib/api/operations/tokens.ts): at most
 * MAX_TOKENS_PER_USER, counted by the condition on the user item's `tokens` map in the issuing
 * transaction, so the cap is exact under concurrency. Revocation deletes the token item; every
 * acceptance of a token reads that item (`resolveToken`: the authorizer, the MCP endpoint, and the
 * Core API dispatcher on each request behind the cached authorizer decision), so a revoked token
 * is refused on its next request. The dispatcher's and the MCP endpoint's read also stamps
 * `tokenLastUsed` when the stored stamp is over a minute old: at most one write per token per
 * minute (docs/accounts-api.md).
 */
import { createHash, randomBytes } from "node:crypto";
import { z } from "zod";
import { now as clockNow } from "#lib/clock.ts";
import {
  findTokenByHash,
  findTokensByHash,
  type StoredTokenRef,
  stampTokenLastUsed,
  type TokenItem,
  tokenKeys,
} from "#lib/db/entities/token.ts";
import { findUser, type UserItem, userKeys } from "#lib/db/entities/user.ts";
import { keys } from "#lib/db/keys.ts";
import { commitSteps, type TransactionStep, tableName } from "#lib/db/store.ts";
import { describeError, log } from "#lib/log.ts";
import { badRequest, forbidden, notFound } from "#lib/shared/errors.ts";

export type { StoredTokenRef };

export const TOKEN_PREFIX = "u-";
/** A token asked for with a credential revoked while the request ran (docs/accounts.md#recovery-ends-every-way-in). */
export const CALLER_REVOKED_MESSAGE = "The credential of this request was revoked";
export const MAX_TOKENS_PER_USER = 20;
/** Longest token name, in characters. */
export const MAX_TOKEN_NAME_LENGTH = 100;
/** `tokenLastUsed` is written again only once the stored stamp is older than this. */
export const LAST_USED_PRECISION_MS = 60_000;
/** Attempts of the issuing transaction while it conflicts with a concurrent one on the user item. */
const ISSUE_ATTEMPTS = 12;

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

/** A token as its owner sees it after issuing: the raw value, the only time it is ever visible. */
export interface IssuedToken {
  token: string;
  tokenId: string;
  masked: string;
  tokenName: string;
  createdAt: string;
}

/**
 * Issue a new token for a user (named `tokenName`, default none). One transaction: the token item,
 * and the reference added to the user item on the condition that the user holds fewer than
 * MAX_TOKENS_PER_USER, so of concurrent issues exactly the allowed number succeed (a conflict
 * between them is retried, never counted as a refusal). Returns the raw token.
 */
export async function issueToken(
  userId: string,
  options: {
    tokenName?: string;
    /**
     * The credential of the request that asks (docs/accounts.md#recovery-ends-every-way-in): the token is issued only while that
     * credential is still alive, in the same transaction, so a request authorised just before a
     * revocation cannot mint a token after it. `tokenId`: one of the user's API tokens (its entry
     * in the user item's map); `sessionSecretHash`: one of the user's sessions (its item).
     */
    issuedWith?: { tokenId: string } | { sessionSecretHash: string };
  } = {},
): Promise<IssuedToken> {
  const token = generateToken();
  const createdAt = new Date(clockNow()).toISOString();
  const tokenName = options.tokenName ?? "";
  const tokenItem: TokenItem = {
    ...tokenKeys.item(token.hash),
    entity: "token",
    userId,
    tokenId: token.tokenId,
    createdAt,
  };
  const ref: StoredTokenRef = { hash: token.hash, masked: token.masked, createdAt, name: tokenName };
  const by = options.issuedWith;
  // A token caller's own entry must still be in the map (the revocation removes it in the
  // transaction that deletes its item); a session caller's session item must still exist.
  const byToken = by && "tokenId" in by ? by.tokenId : undefined;
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
          ConditionExpression: `attribute_exists(pKey) AND size(tokens) < :max${byToken ? " AND attribute_exists(tokens.#by)" : ""}`,
          ExpressionAttributeNames: { "#id": token.tokenId, ...(byToken ? { "#by": byToken } : {}) },
          ExpressionAttributeValues: { ":ref": ref, ":max": MAX_TOKENS_PER_USER },
        },
      },
    },
  ];
  if (by && "sessionSecretHash" in by)
    steps.push({
      name: "caller alive",
      action: {
        ConditionCheck: {
          TableName: tableName(),
          Key: keys.session(userId, by.sessionSecretHash),
          ConditionExpression: "attribute_exists(pKey)",
        },
      },
    });
  const refused = await commitSteps(steps, {
    attempts: ISSUE_ATTEMPTS,
    // Jittered: concurrent issues for one user conflict on its item and must not retry in step.
    backoff: (attempt) => Math.random() * 20 * 2 ** Math.min(attempt, 5),
    cancelled: ({ failed }) =>
      failed.includes("caller alive")
        ? ("revoked" as const)
        : failed.includes("add to user")
          ? ("add to user" as const)
          : undefined,
  });
  if (refused) {
    const user = await findUser(userId);
    if (!user) throw notFound("User not found");
    if (refused === "revoked" || (byToken && !user.tokens[byToken])) throw forbidden(CALLER_REVOKED_MESSAGE);
    throw badRequest(
      `A user can hold at most ${MAX_TOKENS_PER_USER} API tokens; revoke one before creating another`,
    );
  }
  // An audit line: who got which token, by id and preview; never the value. (Keys naming a token
  // are redacted whole by lib/log-backend.ts, hence `id`, `preview` and `name`.)
  log.info("API token issued", { userId, id: token.tokenId, preview: token.masked, name: tokenName });
  return { token: token.raw, tokenId: token.tokenId, masked: token.masked, tokenName, createdAt };
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
  log.info("API token revoked", { userId, id: tokenId, preview: ref.masked });
}

/**
 * Revoke every API token the user item lists (a password reset or change, a deletion: docs/accounts.md#recovery-ends-every-way-in), in
 * one transaction: each token item deleted (the authorizer and the MCP endpoint read it: the next
 * request is a 401) and the user item's map emptied of them (which also ends every OAuth grant
 * bound to one: lib/oauth/access-tokens.ts). Answers how many. Tokens issued after `user` was read
 * are not in it: the caller reads the user again and repeats while any is left.
 */
export async function revokeTokensOf(user: UserItem): Promise<number> {
  const entries = Object.entries(user.tokens);
  if (entries.length === 0) return 0;
  const names = Object.fromEntries(entries.map(([tokenId], index) => [`#t${index}`, tokenId]));
  const steps: TransactionStep[] = [
    ...entries.map(([tokenId, ref]) => ({
      name: `delete token ${tokenId}`,
      action: { Delete: { TableName: tableName(), Key: tokenKeys.item(ref.hash) } },
    })),
    {
      name: "remove from user",
      action: {
        Update: {
          TableName: tableName(),
          Key: userKeys.item(user.userId),
          UpdateExpression: `REMOVE ${Object.keys(names)
            .map((name) => `tokens.${name}`)
            .join(", ")}`,
          ConditionExpression: "attribute_exists(pKey)",
          ExpressionAttributeNames: names,
        },
      },
    },
  ];
  // A conflict with a concurrent issue or use-stamp is retried (the deletes are idempotent).
  await commitSteps(steps, {
    attempts: ISSUE_ATTEMPTS,
    backoff: (attempt) => Math.random() * 20 * 2 ** Math.min(attempt, 5),
  });
  for (const [tokenId, ref] of entries)
    log.info("API token revoked", { userId: user.userId, id: tokenId, preview: ref.masked });
  return entries.length;
}

/**
 * The look-up behind every acceptance of a raw token (the authorizer, the MCP endpoint, the Core
 * API dispatcher's revocation check): token -> owning user, or undefined for an unknown or revoked
 * token. One consistent GetItem. With `stampUse` (callers whose role may write the home table: not
 * the authorizer, which only reads), when the stored `tokenLastUsed` is over
 * LAST_USED_PRECISION_MS old, one conditional UpdateItem stamps it: at most once a minute a token.
 */
export async function resolveToken(
  raw: string,
  options: { stampUse?: boolean } = {},
): Promise<{ userId: string; tokenId: string } | undefined> {
  if (!looksLikeToken(raw)) return undefined;
  const hash = hashToken(raw);
  const token = await findTokenByHash(hash);
  if (!token) return undefined;
  if (options.stampUse) {
    const at = clockNow();
    const staleBefore = new Date(at - LAST_USED_PRECISION_MS).toISOString();
    if (!token.tokenLastUsed || token.tokenLastUsed < staleBefore)
      // Best effort: a stamp that fails (throttled, say) never fails the request it records.
      await stampTokenLastUsed(hash, new Date(at).toISOString(), staleBefore).catch((error: unknown) =>
        log.warn("Token last-use stamp failed", { id: token.tokenId, ...describeError(error) }),
      );
  }
  return { userId: token.userId, tokenId: token.tokenId };
}

/** A token as its owner lists it: never the raw value nor its hash. */
export interface TokenSummary {
  tokenId: string;
  tokenName: string;
  tokenPreview: string;
  tokenCreated: string;
  /** Null while never used; otherwise within a minute of the last use (LAST_USED_PRECISION_MS). */
  tokenLastUsed: string | null;
}

/**
 * A user's tokens, oldest first, with their last use: the user item (its `tokens` map) and one
 * BatchGetItem of the token items.
 */
export async function listUserTokens(userId: string): Promise<TokenSummary[]> {
  const user = await findUser(userId);
  if (!user) throw notFound("User not found");
  const refs = Object.entries(user.tokens);
  const items = refs.length ? await findTokensByHash(refs.map(([, ref]) => ref.hash)) : [];
  const lastUsed = new Map(items.map((item) => [item.tokenId, item.tokenLastUsed]));
  return listTokens(user.tokens).map((token) => ({
    tokenId: token.tokenId,
    tokenName: token.name,
    tokenPreview: token.masked,
    tokenCreated: token.createdAt,
    tokenLastUsed: lastUsed.get(token.tokenId) ?? null,
  }));
}

export function listTokens(tokens: Record<string, StoredTokenRef> | undefined) {
  return Object.entries(tokens ?? {})
    .map(([tokenId, ref]) => ({ tokenId, name: ref.name, masked: ref.masked, createdAt: ref.createdAt }))
    .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
}

/** POST /api/users/{userId}/tokens: the new token's name (nothing else). */
export const NewTokenBody = z
  .object({
    tokenName: z
      .string()
      .trim()
      .min(1, "must not be empty")
      .max(MAX_TOKEN_NAME_LENGTH)
      .describe(`A name to recognise the token by (1 to ${MAX_TOKEN_NAME_LENGTH} characters)`),
  })
  .strict();
export type NewTokenBody = z.infer<typeof NewTokenBody>;
