/** The member entity: reading a stored membership as typed fields, refusing one that is not. */
import { describe, expect, it } from "vitest";
import { memberItemOf, memberKeys } from "#lib/db/entities/member.ts";

describe("the member entity", () => {
  const stored = {
    ...memberKeys.item("c", "u"),
    entity: "member",
    clientId: "c",
    userId: "u",
    roles: ["owner", "admin"],
    memberCreated: "2026-01-01T00:00:00.000Z",
    memberUpdated: "2026-01-01T00:00:00.000Z",
    joinedByInvite: "i",
  };

  it("reads a stored member as typed fields, roles in the stored order", () => {
    expect(memberItemOf(stored)).toEqual(stored);
    expect(stored).toMatchObject({ pKey: "CLIENT#c", sKey: "MEMBER#u" });
    // The client's creator joined by no invite; older items may lack the timestamps.
    const { joinedByInvite: _invite, memberCreated: _c, memberUpdated: _u, ...older } = stored;
    expect(memberItemOf(older)).toEqual(older);
  });

  it("refuses an item that is not a member, naming the field", () => {
    expect(() => memberItemOf({ ...stored, roles: ["emperor"] })).toThrow(/roles/);
    expect(() => memberItemOf({ ...stored, roles: "admin" })).toThrow(/roles/);
    expect(() => memberItemOf({ ...stored, entity: "invite" })).toThrow(/entity/);
    const { userId: _user, ...noUser } = stored;
    expect(() => memberItemOf(noUser)).toThrow(/userId/);
  });
});
