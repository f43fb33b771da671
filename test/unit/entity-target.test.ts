import { describe, expect, it } from "vitest";
import { targetItemOf, targetKeys } from "#lib/db/entities/target.ts";
import { keys } from "#lib/db/keys.ts";

describe("the target entity", () => {
  const stored = {
    pKey: "CLIENT#c",
    sKey: "TARGET#t",
    entity: "target",
    targetId: "t",
    clientId: "c",
    userId: "u",
    parentId: "c",
    targetName: "billing API",
    targetBaseURL: "https://api.example.com/v1",
    targetTestPath: "/health",
    targetRegion: "us-east-1",
    targetDefaultRuleEffect: "deny",
    notes: "owned by the billing team",
    targetCreatedAt: "2026-01-01T00:00:00.000Z",
    targetUpdatedAt: "2026-01-02T00:00:00.000Z",
  };

  it("reads a stored target as typed fields", () => {
    expect(targetItemOf(stored)).toEqual(stored);
    expect(targetItemOf({ ...stored, deletingAt: "2026-01-03T00:00:00.000Z" }).deletingAt).toBe(
      "2026-01-03T00:00:00.000Z",
    );
    // An item without a default effect gets the spec's default.
    const { targetDefaultRuleEffect: _effect, ...withoutEffect } = stored;
    expect(targetItemOf(withoutEffect).targetDefaultRuleEffect).toBe("allow");
  });

  it("refuses an item that is not a target, naming the field", () => {
    expect(() => targetItemOf({ ...stored, targetDefaultRuleEffect: "maybe" })).toThrow(
      /targetDefaultRuleEffect/,
    );
    expect(() => targetItemOf({ ...stored, targetBaseURL: 42 })).toThrow(/targetBaseURL/);
    const { targetRegion: _region, ...withoutRegion } = stored;
    expect(() => targetItemOf(withoutRegion)).toThrow(/targetRegion/);
    expect(() => targetItemOf({ ...stored, entity: "proxy" })).toThrow(/entity/);
  });

  it("keys a target in its client's regional partition", () => {
    expect(targetKeys.item("c", "t")).toEqual(keys.target("c", "t"));
    expect(targetKeys.item("c", "t")).toEqual({ pKey: "CLIENT#c", sKey: "TARGET#t" });
  });
});
