/**
 * Users (spec 2.4, 4.4). The user record lives at USER#<id>; an EMAIL#<email> item makes e-mail
 * addresses unique and lets invites find the account by address.
 */
import { randomUUID } from "node:crypto";
import { z } from "zod";
import { GetCommand, TransactWriteCommand, UpdateCommand } from "../db/document-client.ts";
import { keys } from "../db/keys.ts";
import {
  homeDb,
  type Item,
  isConditionalCheckFailure,
  nowIso,
  tableName,
  transactionConditionFailedAt,
} from "../db/store.ts";
import { conflict, notFound } from "./errors.ts";
import { listTokens, type StoredTokenRef } from "./tokens.ts";

export const NewUser = z.object({
  email: z.string().trim().toLowerCase().email().max(254),
  firstName: z.string().trim().min(1).max(100),
  lastName: z.string().trim().min(1).max(100),
  username: z.string().trim().min(1).max(100).optional(),
  phone: z.string().trim().max(32).optional(),
  bio: z.string().trim().max(2000).optional(),
});
export type NewUser = z.infer<typeof NewUser>;

/** PUT /api/users/{userId}: exactly these four fields may change (anything else is a 400). */
export const UserProfileUpdate = z
  .object({
    userBio: z.string().trim().max(2000),
    userPhone: z
      .string()
      .trim()
      .max(32)
      .regex(/^$|^\+?[0-9 ()-]{3,32}$/, "must be a phone number"),
    userFirstName: z.string().trim().min(1).max(100),
    userLastName: z.string().trim().min(1).max(100),
  })
  .partial()
  .strict()
  .refine((value) => Object.keys(value).length > 0, {
    message: "one of userBio, userPhone, userFirstName, userLastName is required",
  });
export type UserProfileUpdate = z.infer<typeof UserProfileUpdate>;

const asSortedArray = (value: unknown): string[] =>
  value instanceof Set ? [...value].map(String).sort() : Array.isArray(value) ? value.map(String).sort() : [];

export const userClientIds = (user: Item) => asSortedArray(user.userClients);
export const userMspIds = (user: Item) => asSortedArray(user.userMsps);

/** The user as the API shows it: spec fields, masked tokens, no internals. */
export function toApiUser(user: Item) {
  return {
    userId: String(user.userId),
    pKey: "USER",
    sKey: String(user.userId),
    userClients: userClientIds(user),
    userUsername: user.userUsername ?? "",
    userEmail: user.userEmail ?? "",
    userBio: user.userBio ?? "",
    userPhone: user.userPhone ?? "",
    userFirstName: user.userFirstName ?? "",
    userLastName: user.userLastName ?? "",
    userTokens: listTokens(user.tokens as Record<string, StoredTokenRef> | undefined).map((t) => t.masked),
    userMsps: userMspIds(user),
    systemAdmin: user.systemAdmin === true,
    ...(user.userStatus
      ? { userStatus: user.userStatus, userDeletionScheduledAt: user.userDeletionScheduledAt }
      : {}),
    userCreated: user.userCreated,
    userUpdated: user.userUpdated,
  };
}
export type ApiUser = ReturnType<typeof toApiUser>;

export async function getUser(userId: string): Promise<Item | undefined> {
  const result = await homeDb().send(
    new GetCommand({ TableName: tableName(), Key: keys.user(userId), ConsistentRead: true }),
  );
  return result.Item;
}

export async function requireUser(userId: string): Promise<Item> {
  const user = await getUser(userId);
  if (!user) throw notFound("User not found");
  return user;
}

export async function findUserIdByEmail(email: string): Promise<string | undefined> {
  const result = await homeDb().send(
    new GetCommand({ TableName: tableName(), Key: keys.userEmail(email), ConsistentRead: true }),
  );
  return result.Item ? String(result.Item.userId) : undefined;
}

export async function createUser(input: NewUser): Promise<Item> {
  const data = NewUser.parse(input);
  const userId = randomUUID();
  const now = nowIso();
  const user: Item = {
    ...keys.user(userId),
    entity: "user",
    userId,
    userEmail: data.email,
    userUsername: data.username ?? data.email,
    userFirstName: data.firstName,
    userLastName: data.lastName,
    userPhone: data.phone ?? "",
    userBio: data.bio ?? "",
    systemAdmin: false,
    tokens: {},
    userCreated: now,
    userUpdated: now,
  };
  try {
    await homeDb().send(
      new TransactWriteCommand({
        TransactItems: [
          { Put: { TableName: tableName(), Item: user, ConditionExpression: "attribute_not_exists(pKey)" } },
          {
            Put: {
              TableName: tableName(),
              Item: { ...keys.userEmail(data.email), entity: "userEmail", userId },
              ConditionExpression: "attribute_not_exists(pKey)",
            },
          },
        ],
      }),
    );
  } catch (error) {
    if (transactionConditionFailedAt(error, 1)) throw conflict("A user with this email already exists");
    throw error;
  }
  return user;
}

export async function updateUserProfile(userId: string, changes: UserProfileUpdate): Promise<Item> {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = { ":now": nowIso() };
  const sets = ["userUpdated = :now"];
  for (const [field, value] of Object.entries(changes)) {
    names[`#${field}`] = field;
    values[`:${field}`] = value;
    sets.push(`#${field} = :${field}`);
  }
  try {
    const result = await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.user(userId),
        UpdateExpression: `SET ${sets.join(", ")}`,
        ConditionExpression: "attribute_exists(pKey)",
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ReturnValues: "ALL_NEW",
      }),
    );
    return result.Attributes ?? {};
  } catch (error) {
    if (isConditionalCheckFailure(error)) throw notFound("User not found");
    throw error;
  }
}

export async function setSystemAdmin(userId: string, systemAdmin: boolean): Promise<Item> {
  try {
    const result = await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.user(userId),
        UpdateExpression: "SET systemAdmin = :flag, userUpdated = :now",
        ConditionExpression: "attribute_exists(pKey)",
        ExpressionAttributeValues: { ":flag": systemAdmin, ":now": nowIso() },
        ReturnValues: "ALL_NEW",
      }),
    );
    return result.Attributes ?? {};
  } catch (error) {
    if (isConditionalCheckFailure(error)) throw notFound("User not found");
    throw error;
  }
}
