/** The client entity: reading a stored client as typed fields, refusing one that is not. */
import { describe, expect, it } from "vitest";
import { clientItemOf, clientKeys } from "#lib/db/entities/client.ts";

describe("the client entity", () => {
  const stored = {
    ...clientKeys.item("c"),
    entity: "client",
    clientId: "c",
    clientName: "Acme",
    clientStatus: "active",
    memberCount: 2,
    adminCount: 1,
    ownerCount: 1,
    createdBy: "u",
    clientCreated: "2026-01-01T00:00:00.000Z",
    clientUpdated: "2026-01-01T00:00:00.000Z",
  };

  it("reads a stored client as typed fields", () => {
    expect(clientItemOf(stored)).toEqual(stored);
    expect(stored).toMatchObject({ pKey: "CLIENT#c", sKey: "CLIENT" });
    const scheduled = {
      ...stored,
      clientStatus: "pendingDeletion",
      clientDeletionScheduledAt: "2026-02-01T00:00:00.000Z",
      deletionRequestedBy: "u",
      gsi2pk: "DELETION#CLIENT",
      gsi2sk: "2026-02-01T00:00:00.000Z#CLIENT#c",
    };
    expect(clientItemOf(scheduled)).toEqual(scheduled);
    // Older clients may lack the status and the counts: active, and counted as none.
    const { clientStatus: _status, memberCount: _m, adminCount: _a, ownerCount: _o, ...older } = stored;
    expect(clientItemOf(older)).toEqual({
      ...older,
      clientStatus: "active",
      memberCount: 0,
      adminCount: 0,
      ownerCount: 0,
    });
  });

  it("refuses an item that is not a client, naming the field", () => {
    expect(() => clientItemOf({ ...stored, adminCount: "1" })).toThrow(/adminCount/);
    expect(() => clientItemOf({ ...stored, clientStatus: "gone" })).toThrow(/clientStatus/);
    expect(() => clientItemOf({ ...stored, entity: "member" })).toThrow(/entity/);
    const { clientName: _name, ...noName } = stored;
    expect(() => clientItemOf(noName)).toThrow(/clientName/);
  });
});
