/** Users (spec 4.4): the caller's own record, over real HTTP against the local stack. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keys } from "#lib/db/keys.ts";
import { createClientFor, joinClient, startTestStack, storedItem, type TestStack } from "../support/stack.ts";

let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack?.stop();
});

const NOT_SELF = "Forbidden: you can only access your own user resources";

/** The API's user shape (spec 2.4): exactly these fields, tokens masked. */
const userShape = (userId: string, email: string) => ({
  userId,
  pKey: "USER",
  sKey: userId,
  userClients: [],
  userUsername: email,
  userEmail: email,
  userBio: "",
  userPhone: "",
  userFirstName: expect.any(String),
  userLastName: expect.any(String),
  userTokens: [expect.stringMatching(/^u-….{4}$/)],
  userMsps: [],
  systemAdmin: false,
  userCreated: expect.any(String),
  userUpdated: expect.any(String),
});

describe("GET /api/users and /api/users/{userId}", () => {
  it("answer the caller's own user, exactly the declared fields", async () => {
    const user = await stack.newUser();
    for (const path of ["/api/users", `/api/users/${user.userId}`]) {
      const response = await user.api.get(path);
      expect(response.status).toBe(200);
      expect(response.body).toEqual({
        message: "User retrieved",
        users: [userShape(user.userId, user.email)],
      });
    }
  });

  it("refuse another user's id with 403, as for every /api/users/{userId} path", async () => {
    const user = await stack.newUser();
    const other = await stack.newUser();
    for (const [method, body] of [
      ["GET", undefined],
      ["PUT", { userFirstName: "Mallory" }],
      ["DELETE", { immediatelyDelete: true }],
    ] as const) {
      const response = await user.api.request(method, `/api/users/${other.userId}`, body);
      expect(response.status).toBe(403);
      expect(response.body).toEqual({ message: NOT_SELF });
    }
    expect((await storedItem(keys.user(other.userId)))?.userStatus).toBeUndefined();
    expect((await other.api.get("/api/users")).body.users[0].userFirstName).not.toBe("Mallory");
  });
});

describe("PUT /api/users/{userId}", () => {
  it("changes the profile fields given and answers the updated user", async () => {
    const user = await stack.newUser();
    const response = await user.api.put(`/api/users/${user.userId}`, {
      userFirstName: "Ada",
      userPhone: "+44 20 7946 0000",
    });
    expect(response.status).toBe(200);
    expect(response.body.message).toBe("User updated");
    expect(response.body.users[0]).toMatchObject({ userFirstName: "Ada", userPhone: "+44 20 7946 0000" });
    expect(await storedItem(keys.user(user.userId))).toMatchObject({ userFirstName: "Ada" });
  });

  it("rejects any other field with 400 naming it", async () => {
    const user = await stack.newUser();
    const response = await user.api.put(`/api/users/${user.userId}`, {
      userFirstName: "Ada",
      userEmail: "x@example.test",
    });
    expect(response.status).toBe(400);
    expect(response.body.fields).toEqual(["userEmail"]);
  });
});

describe("DELETE /api/users/{userId}", () => {
  it("by default schedules the deletion: the user item shows it, and its token is revoked at once", async () => {
    const user = await stack.newUser();
    const response = await user.api.delete(`/api/users/${user.userId}`);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      message: expect.stringMatching(/^User marked for deletion/),
      userDeletionScheduledAt: expect.any(String),
    });
    expect(await storedItem(keys.user(user.userId))).toMatchObject({
      userStatus: "pendingDeletion",
      userDeletionScheduledAt: response.body.userDeletionScheduledAt,
    });
    // The grace period keeps the data, not the access (test/e2e/recovery.test.ts has the rest).
    expect((await user.api.get("/api/users")).status).toBe(401);
  });

  it("with immediatelyDelete (query string) deletes the account now, and its token stops working", async () => {
    const user = await stack.newUser();
    const response = await user.api.delete(`/api/users/${user.userId}?immediatelyDelete=true`);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ message: "User deleted", userDeletionScheduledAt: null });
    expect(await storedItem(keys.user(user.userId))).toBeUndefined();
    expect((await user.api.get("/api/users")).status).toBe(401);
  });

  it("is refused (409) while the user is the last admin of a client with other members", async () => {
    const user = await stack.newUser();
    const clientId = await createClientFor(user, "Kept");
    await joinClient(user, clientId, await stack.newUser(), "user");
    const response = await user.api.delete(`/api/users/${user.userId}`, { immediatelyDelete: true });
    expect(response.status).toBe(409);
    expect(response.body.message).toMatch(/last remaining admin/);
    expect(await storedItem(keys.user(user.userId))).toBeDefined();
  });
});
