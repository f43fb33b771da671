/** The invite entity: reading a stored invite as typed fields, refusing one that is not an invite. */
import { describe, expect, it } from "vitest";
import { inviteItemOf, inviteKeys } from "#lib/db/entities/invite.ts";

describe("the invite entity", () => {
  const stored = {
    ...inviteKeys.item("c", "i"),
    ...inviteKeys.byEmail("ann@example.com", "i"),
    entity: "invite",
    inviteId: "i",
    clientId: "c",
    clientName: "Acme",
    roles: ["admin"],
    userEmail: "ann@example.com",
    invitedBy: "u",
    inviteCreated: "2026-01-01T00:00:00.000Z",
    inviteUpdated: "2026-01-01T00:00:00.000Z",
    TTL: 1_800_000_000,
  };

  it("reads a stored invite as typed fields", () => {
    expect(inviteItemOf(stored)).toEqual(stored);
    expect(stored).toMatchObject({ pKey: "CLIENT#c", sKey: "INVITE#i", gsi1pk: "EMAIL#ann@example.com" });
    // Older invites may lack who sent them and when.
    const { invitedBy: _by, inviteCreated: _created, inviteUpdated: _updated, ...older } = stored;
    expect(inviteItemOf(older)).toEqual(older);
  });

  it("refuses an item that is not an invite, naming the field", () => {
    expect(() => inviteItemOf({ ...stored, TTL: "soon" })).toThrow(/TTL/);
    expect(() => inviteItemOf({ ...stored, roles: ["emperor"] })).toThrow(/roles/);
    expect(() => inviteItemOf({ ...stored, entity: "member" })).toThrow(/entity/);
    const { userEmail: _email, ...noEmail } = stored;
    expect(() => inviteItemOf(noEmail)).toThrow(/userEmail/);
  });
});
