/**
 * Sign-in accounts as stored (docs/accounts.md), in the user's partition beside the user item:
 * - the account (`USER#<id>` / `ACCOUNT`): the password hash and whether the e-mail is verified;
 * - one pending e-mail code per purpose (`CODE#verify`, `CODE#reset`): its salted SHA-256, its
 *   expiry and its wrong attempts (at most 5, counted with conditional writes), deleted when used;
 * - the sessions (`SESSION#<sha256(secret)>`): idle and absolute expiry, a TTL; listed per user
 *   with a consistent Query of the partition.
 * And the sign-in failures of an address (`SIGNIN#<email>` / `FAILURES`): the lockout's window.
 */
import * as z from "zod/mini";
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from "#lib/aws/document-client.ts";
import { keys } from "#lib/db/keys.ts";
import {
  batchDelete,
  commitSteps,
  homeDb,
  isConditionalCheckFailure,
  keyOf,
  nowIso,
  parseStored,
  queryPartition,
  type TransactionStep,
  tableName,
} from "#lib/db/store.ts";
import type { NewUserItem, UserEmailItem } from "./user.ts";

export const AccountItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("account"),
  userId: z.string(),
  /** `scrypt$N$r$p$salt$hash` (lib/shared/passwords.ts); absent for a user an operator created. */
  passwordHash: z.optional(z.string()),
  emailVerified: z.boolean(),
  passwordChanged: z.optional(z.string()),
  accountCreated: z.string(),
});
export type AccountItem = z.infer<typeof AccountItem>;

export type CodePurpose = "verify" | "reset";

export const AccountCodeItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("accountCode"),
  userId: z.string(),
  purpose: z.enum(["verify", "reset"]),
  /** SHA-256 of salt and code, hex; the code itself is only in the e-mail. */
  codeHash: z.string(),
  codeSalt: z.string(),
  /** Wrong codes tried against this one; at 5 it is void. */
  attempts: z.int(),
  /** Epoch seconds; the code is refused from then on. */
  expiresAt: z.int(),
  createdAt: z.string(),
  TTL: z.int(),
});
export type AccountCodeItem = z.infer<typeof AccountCodeItem>;

export const SessionItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("session"),
  userId: z.string(),
  /** SHA-256 of the session secret, hex (the key's suffix); the secret is only in the cookie. */
  secretHash: z.string(),
  /** The session's public id (a random UUID): how the user names it to revoke it. */
  sessionId: z.string(),
  createdAt: z.string(),
  lastSeenAt: z.string(),
  /** Epoch seconds: the session ends when unused until then (moved on by use). */
  idleExpiresAt: z.int(),
  /** Epoch seconds: the session ends then, used or not. */
  absoluteExpiresAt: z.int(),
  userAgent: z.optional(z.string()),
  TTL: z.int(),
});
export type SessionItem = z.infer<typeof SessionItem>;

/** A browser a user signed in from: the SHA-256 of its device cookie, kept a year after its last sign-in. */
export const DeviceItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("device"),
  userId: z.string(),
  deviceHash: z.string(),
  lastSignInAt: z.string(),
  TTL: z.int(),
});
export type DeviceItem = z.infer<typeof DeviceItem>;

export const accountItemOf = (item: Record<string, unknown>): AccountItem =>
  parseStored(AccountItem, "account", item);
export const accountCodeItemOf = (item: Record<string, unknown>): AccountCodeItem =>
  parseStored(AccountCodeItem, "account code", item);
export const sessionItemOf = (item: Record<string, unknown>): SessionItem =>
  parseStored(SessionItem, "session", item);

export const accountKeys = {
  account: keys.userAccount,
  code: keys.accountCode,
  session: keys.session,
  device: keys.userDevice,
  signInFailures: keys.signInFailures,
  recoveryToken: keys.recoveryToken,
} as const;

async function getItem(key: { pKey: string; sKey: string }) {
  const result = await homeDb().send(
    new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: true }),
  );
  return result.Item;
}

/** Access pattern "account of a user": a consistent GetItem. */
export async function findAccount(userId: string): Promise<AccountItem | undefined> {
  const item = await getItem(accountKeys.account(userId));
  return item ? accountItemOf(item) : undefined;
}

/**
 * A user made by sign-up, in one transaction: `put user`, `claim email` (the address's uniqueness
 * item) and `put account`. "emailTaken" when the address already has a user (nothing written).
 */
export async function createUserWithAccount(
  user: NewUserItem,
  emailItem: UserEmailItem,
  account: AccountItem,
): Promise<"created" | "emailTaken"> {
  const put = (Item: Record<string, unknown>) => ({
    Put: { TableName: tableName(), Item, ConditionExpression: "attribute_not_exists(pKey)" },
  });
  const steps: TransactionStep[] = [
    { name: "put user", action: put(user) },
    { name: "claim email", action: put(emailItem) },
    { name: "put account", action: put(account) },
  ];
  const taken = await commitSteps(steps, {
    cancelled: ({ failed }) => (failed.includes("claim email") ? ("emailTaken" as const) : undefined),
  });
  return taken ?? "created";
}

/** A first account for a user that has none (an operator sets its password); false when it has one already. */
export async function putNewAccount(account: AccountItem): Promise<boolean> {
  try {
    await homeDb().send(
      new PutCommand({
        TableName: tableName(),
        Item: account,
        ConditionExpression: "attribute_not_exists(pKey)",
      }),
    );
    return true;
  } catch (error) {
    if (isConditionalCheckFailure(error)) return false;
    throw error;
  }
}

/** A new password for an account whose e-mail is not verified yet (sign-up again); false when it is verified by now. */
export async function replaceUnverifiedPassword(userId: string, passwordHash: string): Promise<boolean> {
  try {
    await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: accountKeys.account(userId),
        UpdateExpression: "SET passwordHash = :hash, passwordChanged = :now",
        ConditionExpression: "attribute_exists(pKey) AND emailVerified = :false",
        ExpressionAttributeValues: { ":hash": passwordHash, ":now": nowIso(), ":false": false },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionalCheckFailure(error)) return false;
    throw error;
  }
}

/** Store a new code of a purpose, replacing the pending one (its attempts start again at 0). */
export async function putAccountCode(code: AccountCodeItem): Promise<void> {
  await homeDb().send(new PutCommand({ TableName: tableName(), Item: code }));
}

/** Access pattern "pending code of a user and purpose": a consistent GetItem. */
export async function findAccountCode(
  userId: string,
  purpose: CodePurpose,
): Promise<AccountCodeItem | undefined> {
  const item = await getItem(accountKeys.code(userId, purpose));
  return item ? accountCodeItemOf(item) : undefined;
}

/**
 * Count one wrong code against `code`, exactly: an atomic ADD conditioned on it still being the
 * same code with fewer than `maxAttempts` attempts. False when it was already void (or replaced).
 */
export async function countWrongCode(code: AccountCodeItem, maxAttempts: number): Promise<boolean> {
  try {
    await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keyOf(code),
        UpdateExpression: "ADD attempts :one",
        ConditionExpression: "codeHash = :hash AND attempts < :max",
        ExpressionAttributeValues: { ":one": 1, ":hash": code.codeHash, ":max": maxAttempts },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionalCheckFailure(error)) return false;
    throw error;
  }
}

/**
 * Use a code, once: one transaction of `use code` (a Delete conditioned on the same code, fewer
 * than `maxAttempts` wrong attempts and not expired: of racing uses exactly one passes) and
 * `update account`: the e-mail verified, and for a reset the new password (the account is made
 * when an operator-created user sets their first password). False when another use won.
 */
export async function redeemAccountCode(
  code: AccountCodeItem,
  options: { maxAttempts: number; nowSeconds: number; newPasswordHash?: string },
): Promise<boolean> {
  const now = nowIso();
  const values: Record<string, unknown> = {
    ":true": true,
    ":user": code.userId,
    ":account": "account",
    ":now": now,
  };
  let update =
    "SET emailVerified = :true, userId = :user, entity = :account, accountCreated = if_not_exists(accountCreated, :now)";
  if (options.newPasswordHash !== undefined) {
    update += ", passwordHash = :hash, passwordChanged = :now";
    values[":hash"] = options.newPasswordHash;
  }
  const steps: TransactionStep[] = [
    {
      name: "use code",
      action: {
        Delete: {
          TableName: tableName(),
          Key: keyOf(code),
          ConditionExpression: "codeHash = :hash AND attempts < :max AND expiresAt > :now",
          ExpressionAttributeValues: {
            ":hash": code.codeHash,
            ":max": options.maxAttempts,
            ":now": options.nowSeconds,
          },
        },
      },
    },
    {
      name: "update account",
      action: {
        Update: {
          TableName: tableName(),
          Key: accountKeys.account(code.userId),
          UpdateExpression: update,
          ExpressionAttributeValues: values,
        },
      },
    },
  ];
  const lost = await commitSteps(steps, {
    cancelled: ({ failed, conflict }) =>
      failed.includes("use code") || conflict ? ("lost" as const) : undefined,
  });
  return lost === undefined;
}

export async function putSession(session: SessionItem): Promise<void> {
  await homeDb().send(
    new PutCommand({
      TableName: tableName(),
      Item: session,
      ConditionExpression: "attribute_not_exists(pKey)",
    }),
  );
}

/** Access pattern "session by user and secret hash": a consistent GetItem. */
export async function findSession(userId: string, secretHash: string): Promise<SessionItem | undefined> {
  const item = await getItem(accountKeys.session(userId, secretHash));
  return item ? sessionItemOf(item) : undefined;
}

/** Move a session's idle expiry on (it was used); nothing when it was revoked meanwhile. */
export async function touchSession(
  session: SessionItem,
  lastSeenAt: string,
  idleExpiresAt: number,
): Promise<void> {
  try {
    await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keyOf(session),
        UpdateExpression: "SET lastSeenAt = :seen, idleExpiresAt = :idle",
        ConditionExpression: "attribute_exists(pKey)",
        ExpressionAttributeValues: { ":seen": lastSeenAt, ":idle": idleExpiresAt },
      }),
    );
  } catch (error) {
    if (!isConditionalCheckFailure(error)) throw error;
  }
}

export async function deleteSession(userId: string, secretHash: string): Promise<void> {
  await homeDb().send(
    new DeleteCommand({ TableName: tableName(), Key: accountKeys.session(userId, secretHash) }),
  );
}

/** Access pattern "sessions of a user": a consistent Query of the user's partition, `SESSION#` prefix. */
export async function listSessions(userId: string): Promise<SessionItem[]> {
  const items = await queryPartition(keys.userAccount(userId).pKey, {
    sKeyPrefix: "SESSION#",
    consistent: true,
  });
  return items.map(sessionItemOf);
}

/**
 * Revoke every session of a user (a password reset, a deletion), or every one but `keepSecretHash`
 * (a password change keeps the session it was made in); answers how many were deleted.
 */
export async function deleteSessionsOfUser(
  userId: string,
  options: { keepSecretHash?: string } = {},
): Promise<number> {
  const sessions = (await listSessions(userId)).filter(
    (session) => session.secretHash !== options.keepSecretHash,
  );
  await batchDelete(sessions.map(keyOf));
  return sessions.length;
}

/**
 * A password reset's recovery token (docs/accounts.md#recovery-ends-every-way-in): lets its holder remove the user's passkeys until
 * `expiresAt`. Only its SHA-256 is stored (the key's suffix); several may be pending.
 */
export const RecoveryTokenItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("recoveryToken"),
  userId: z.string(),
  tokenHash: z.string(),
  createdAt: z.string(),
  /** Epoch seconds: refused from then on (the TTL deletes it later). */
  expiresAt: z.int(),
  TTL: z.int(),
});
export type RecoveryTokenItem = z.infer<typeof RecoveryTokenItem>;

export async function putRecoveryToken(item: RecoveryTokenItem): Promise<void> {
  await homeDb().send(
    new PutCommand({ TableName: tableName(), Item: item, ConditionExpression: "attribute_not_exists(pKey)" }),
  );
}

/**
 * Access pattern "recovery token of a user by hash": a consistent GetItem of `USER#<id>` /
 * `RECOVERY#<sha256>`; one past its expiry reads as none (the TTL deletes it a while later).
 */
export async function findRecoveryToken(
  userId: string,
  tokenHash: string,
  nowSeconds: number,
): Promise<RecoveryTokenItem | undefined> {
  const item = await getItem(keys.recoveryToken(userId, tokenHash));
  if (!item) return undefined;
  const token = parseStored(RecoveryTokenItem, "recovery token", item);
  return token.expiresAt > nowSeconds ? token : undefined;
}

/**
 * A new password for an account, in place of the one that was checked (`currentHash`): false when
 * the password changed meanwhile (another change or a reset won), so of racing changes one wins.
 */
export async function replacePassword(
  userId: string,
  currentHash: string,
  passwordHash: string,
): Promise<boolean> {
  try {
    await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: accountKeys.account(userId),
        UpdateExpression: "SET passwordHash = :hash, passwordChanged = :now",
        ConditionExpression: "passwordHash = :current",
        ExpressionAttributeValues: { ":hash": passwordHash, ":current": currentHash, ":now": nowIso() },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionalCheckFailure(error)) return false;
    throw error;
  }
}

export type SignInReservation =
  | { reserved: true; windowEnd: number }
  | { reserved: false; windowEnd: number };

/**
 * Reserve one sign-in attempt of an address, exactly: an atomic ADD on the address's failures
 * item, conditioned on its window being open with fewer than `max` failures; when its window has
 * ended (or it has none), a new window starting now with this attempt. Of racing attempts, at most
 * `max` per window are reserved; the rest learn when the window ends. A reserved attempt that
 * turns out not to be a failure is released (`releaseSignInAttempt`).
 */
export async function reserveSignInAttempt(
  email: string,
  options: { nowMs: number; windowMs: number; max: number },
): Promise<SignInReservation> {
  const key = accountKeys.signInFailures(email);
  for (let round = 0; round < 4; round += 1) {
    try {
      const result = await homeDb().send(
        new UpdateCommand({
          TableName: tableName(),
          Key: key,
          UpdateExpression: "ADD failures :one",
          ConditionExpression: "windowEnd > :now AND failures < :max",
          ExpressionAttributeValues: { ":one": 1, ":now": options.nowMs, ":max": options.max },
          ReturnValues: "ALL_NEW",
        }),
      );
      return { reserved: true, windowEnd: Number(result.Attributes?.windowEnd) };
    } catch (error) {
      if (!isConditionalCheckFailure(error)) throw error;
    }
    const windowEnd = options.nowMs + options.windowMs;
    try {
      await homeDb().send(
        new PutCommand({
          TableName: tableName(),
          Item: {
            ...key,
            entity: "signInFailures",
            failures: 1,
            windowEnd,
            TTL: Math.ceil(windowEnd / 1000) + 60,
          },
          ConditionExpression: "attribute_not_exists(pKey) OR windowEnd <= :now",
          ExpressionAttributeValues: { ":now": options.nowMs },
        }),
      );
      return { reserved: true, windowEnd };
    } catch (error) {
      if (!isConditionalCheckFailure(error)) throw error;
    }
    // Neither: the window is open and full (locked), or another attempt just opened a new one.
    const current = await getItem(key);
    const currentEnd = Number(current?.windowEnd ?? 0);
    if (current && currentEnd > options.nowMs && Number(current.failures) >= options.max)
      return { reserved: false, windowEnd: currentEnd };
  }
  throw new Error("Sign-in attempt could not be counted");
}

/** Give back a reserved attempt that was not a failure (the right password), in the window it was taken from. */
export async function releaseSignInAttempt(email: string, windowEnd: number): Promise<void> {
  try {
    await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: accountKeys.signInFailures(email),
        UpdateExpression: "ADD failures :minus",
        ConditionExpression: "windowEnd = :end AND failures > :zero",
        ExpressionAttributeValues: { ":minus": -1, ":end": windowEnd, ":zero": 0 },
      }),
    );
  } catch (error) {
    if (!isConditionalCheckFailure(error)) throw error;
  }
}

/** Access pattern "device of a user": a consistent GetItem of `USER#<id>` / `DEVICE#<sha256>`. */
export async function findDevice(userId: string, deviceHash: string): Promise<DeviceItem | undefined> {
  const item = await getItem(accountKeys.device(userId, deviceHash));
  return item ? parseStored(DeviceItem, "device", item) : undefined;
}

/** Record (or refresh) a browser of a user: its last sign-in and TTL move on. */
export async function putDevice(device: DeviceItem): Promise<void> {
  await homeDb().send(new PutCommand({ TableName: tableName(), Item: device }));
}

/** Access pattern "has the user a known browser": a consistent Query of `DEVICE#`, at most one item. */
export async function hasDevice(userId: string): Promise<boolean> {
  const items = await queryPartition(keys.userAccount(userId).pKey, {
    sKeyPrefix: "DEVICE#",
    max: 1,
    consistent: true,
  });
  return items.length > 0;
}
