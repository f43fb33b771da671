/** The user and token entities: reading stored items as typed fields, refusing ones that are not. */
import { describe, expect, it } from "vitest";
import { tokenItemOf, tokenKeys } from "#lib/db/entities/token.ts";
import { userEmailItemOf, userItemOf, userKeys } from "#lib/db/entities/user.ts";

describe("the user entity", () => {
  const stored = {
    ...userKeys.item("u"),
    entity: "user",
    userId: "u",
    userEmail: "ann@example.com",
    userUsername: "ann",
    userFirstName: "Ann",
    userLastName: "Lee",
    userPhone: "",
    userBio: "",
    systemAdmin: false,
    tokens: { tok_1: { hash: "h", masked: "u-…abcd", createdAt: "2026-01-01T00:00:00.000Z", name: "ci" } },
    userClients: new Set(["c2", "c1"]),
    userMsps: new Set(["m"]),
    userCreated: "2026-01-01T00:00:00.000Z",
    userUpdated: "2026-01-01T00:00:00.000Z",
  };

  it("reads a stored user as typed fields", () => {
    expect(userItemOf(stored)).toEqual(stored);
    expect(stored).toMatchObject({ pKey: "USER#u", sKey: "USER" });
    const pending = {
      ...stored,
      userStatus: "pendingDeletion",
      userDeletionScheduledAt: "2026-02-01T00:00:00.000Z",
    };
    expect(userItemOf(pending)).toEqual(pending);
  });

  it("gives defaults for what a new or older user item lacks (no empty string sets in DynamoDB)", () => {
    const { userClients: _c, userMsps: _m, tokens: _t, userPhone: _p, systemAdmin: _s, ...older } = stored;
    expect(userItemOf(older)).toEqual({
      ...older,
      userClients: new Set(),
      userMsps: new Set(),
      tokens: {},
      userPhone: "",
      systemAdmin: false,
    });
  });

  it("refuses an item that is not a user, naming the field", () => {
    expect(() => userItemOf({ ...stored, systemAdmin: "yes" })).toThrow(/systemAdmin/);
    expect(() => userItemOf({ ...stored, userClients: ["c1"] })).toThrow(/userClients/);
    expect(() => userItemOf({ ...stored, tokens: { tok_1: { hash: "h" } } })).toThrow(
      /tokens\.tok_1\.masked/,
    );
    expect(() => userItemOf({ ...stored, entity: "member" })).toThrow(/entity/);
    const { userEmail: _email, ...noEmail } = stored;
    expect(() => userItemOf(noEmail)).toThrow(/userEmail/);
  });

  it("reads the e-mail item, refusing one without its user", () => {
    const email = { ...userKeys.email("Ann@Example.com"), entity: "userEmail", userId: "u" };
    expect(email.pKey).toBe("EMAIL#ann@example.com");
    expect(userEmailItemOf(email)).toEqual(email);
    expect(() => userEmailItemOf({ ...email, userId: 7 })).toThrow(/userId/);
  });
});

describe("the token entity", () => {
  const stored = {
    ...tokenKeys.item("abc"),
    entity: "token",
    userId: "u",
    tokenId: "tok_1",
    createdAt: "2026-01-01T00:00:00.000Z",
  };

  it("reads a stored token as typed fields", () => {
    expect(tokenItemOf(stored)).toEqual(stored);
    expect(stored).toMatchObject({ pKey: "TOKEN#abc", sKey: "TOKEN" });
  });

  it("refuses an item that is not a token, naming the field", () => {
    const { userId: _user, ...noUser } = stored;
    expect(() => tokenItemOf(noUser)).toThrow(/userId/);
    expect(() => tokenItemOf({ ...stored, entity: "user" })).toThrow(/entity/);
  });
});
