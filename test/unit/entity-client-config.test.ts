/** The client configuration entity: stored items of every plan read as typed fields. */
import { describe, expect, it } from "vitest";
import { clientConfigItemOf, clientConfigKeys } from "#lib/db/entities/client-config.ts";

describe("the client configuration entity", () => {
  const stored = {
    ...clientConfigKeys.item("c"),
    clientId: "c",
    configCreated: "2026-11-01T00:00:00.000Z",
    configUpdated: "2026-11-01T00:00:00.000Z",
  };

  it("reads an enterprise item whose limits hold only requestsPerMinute (the other window: no limit)", () => {
    const item = clientConfigItemOf({
      ...stored,
      planTier: "enterprise_custom",
      limits: { requestsPerMinute: 10_000 },
    });
    expect(item.limits).toEqual({ requestsPerMinute: 10_000, requestsPerDay: null });
  });

  it("reads a managed client's two limits, and an item without limits as unlimited", () => {
    expect(
      clientConfigItemOf({ ...stored, limits: { requestsPerMinute: 5, requestsPerDay: 100 } }).limits,
    ).toEqual({
      requestsPerMinute: 5,
      requestsPerDay: 100,
    });
    expect(clientConfigItemOf(stored).limits).toEqual({ requestsPerMinute: null, requestsPerDay: null });
  });

  it("refuses limits that are not numbers, naming the field", () => {
    expect(() => clientConfigItemOf({ ...stored, limits: { requestsPerMinute: "many" } })).toThrow(/limits/);
  });
});
