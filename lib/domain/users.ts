/**
 * Users (spec 2.4, 4.4). The user record lives at USER#<id>; an EMAIL#<email> item makes e-mail
 * addresses unique and lets invites find the account by address.
 */
import { randomUUID } from "node:crypto";
import { z } from "zod";
import { UpdateCommand } from "#lib/aws/document-client.ts";
import {
  findUser,
  findUserIdByEmail,
  type NewUserItem,
  type UserEmailItem,
  type UserItem,
  userItemOf,
  userKeys,
} from "#lib/db/entities/user.ts";
import {
  commitSteps,
  homeDb,
  isConditionalCheckFailure,
  nowIso,
  type TransactionStep,
  tableName,
} from "#lib/db/store.ts";
import { conflict, notFound } from "#lib/shared/errors.ts";
import { listTokens } from "./tokens.ts";

export { findUserIdByEmail };

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

const sorted = (ids: ReadonlySet<string>) => [...ids].sort();

export const userClientIds = (user: UserItem) => sorted(user.userClients);
export const userMspIds = (user: UserItem) => sorted(user.userMsps);

/** The user as the API shows it: spec fields, masked tokens, no internals. */
export function toApiUser(user: UserItem) {
  return {
    userId: user.userId,
    pKey: "USER" as const,
    sKey: user.userId,
    userClients: userClientIds(user),
    userUsername: user.userUsername,
    userEmail: user.userEmail,
    userBio: user.userBio,
    userPhone: user.userPhone,
    userFirstName: user.userFirstName,
    userLastName: user.userLastName,
    userTokens: listTokens(user.tokens).map((t) => t.masked),
    userMsps: userMspIds(user),
    systemAdmin: user.systemAdmin,
    ...(user.userStatus
      ? { userStatus: user.userStatus, userDeletionScheduledAt: user.userDeletionScheduledAt }
      : {}),
    userCreated: user.userCreated,
    userUpdated: user.userUpdated,
  };
}
export type ApiUser = ReturnType<typeof toApiUser>;

/** The user by id, or undefined. */
export const getUser = (userId: string): Promise<UserItem | undefined> => findUser(userId);

export async function requireUser(userId: string): Promise<UserItem> {
  const user = await findUser(userId);
  if (!user) throw notFound("User not found");
  return user;
}

export async function createUser(input: NewUser): Promise<UserItem> {
  const data = NewUser.parse(input);
  const userId = randomUUID();
  const now = nowIso();
  const user: NewUserItem = {
    ...userKeys.item(userId),
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
  const emailItem: UserEmailItem = { ...userKeys.email(data.email), entity: "userEmail", userId };
  const steps: TransactionStep[] = [
    {
      name: "put user",
      action: {
        Put: { TableName: tableName(), Item: user, ConditionExpression: "attribute_not_exists(pKey)" },
      },
    },
    {
      name: "claim email",
      action: {
        Put: { TableName: tableName(), Item: emailItem, ConditionExpression: "attribute_not_exists(pKey)" },
      },
    },
  ];
  await commitSteps(steps, {
    cancelled: ({ failed }) =>
      failed.includes("claim email") ? conflict("A user with this email already exists") : undefined,
  });
  return userItemOf(user);
}

export async function updateUserProfile(userId: string, changes: UserProfileUpdate): Promise<UserItem> {
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
        Key: userKeys.item(userId),
        UpdateExpression: `SET ${sets.join(", ")}`,
        ConditionExpression: "attribute_exists(pKey)",
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ReturnValues: "ALL_NEW",
      }),
    );
    return userItemOf(result.Attributes ?? {});
  } catch (error) {
    if (isConditionalCheckFailure(error)) throw notFound("User not found");
    throw error;
  }
}

export async function setSystemAdmin(userId: string, systemAdmin: boolean): Promise<UserItem> {
  try {
    const result = await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: userKeys.item(userId),
        UpdateExpression: "SET systemAdmin = :flag, userUpdated = :now",
        ConditionExpression: "attribute_exists(pKey)",
        ExpressionAttributeValues: { ":flag": systemAdmin, ":now": nowIso() },
        ReturnValues: "ALL_NEW",
      }),
    );
    return userItemOf(result.Attributes ?? {});
  } catch (error) {
    if (isConditionalCheckFailure(error)) throw notFound("User not found");
    throw error;
  }
}
