import { describe, expect, it } from "vitest";
import { REGION_STREAM_FILTERS, regionStreamFilterPatterns } from "#lib/infra/region-stream.ts";
import { matchesAnyPattern } from "#lib/streams/event-filter.ts";

const record = (eventName: string, image?: Record<string, unknown>) => ({
  eventName,
  dynamodb: { Keys: { pKey: { S: "p" }, sKey: { S: "s" } }, ...(image ? { NewImage: image } : {}) },
});

describe("Lambda event filter patterns (local and in the handler)", () => {
  const meterAlerts = REGION_STREAM_FILTERS.meterAlerts;

  it("keeps request-log INSERTs and meter-counter INSERTs and MODIFYs", () => {
    expect(matchesAnyPattern(meterAlerts, record("INSERT", { entity: { S: "requestLog" } }))).toBe(true);
    expect(matchesAnyPattern(meterAlerts, record("INSERT", { entity: { S: "meterCounter" } }))).toBe(true);
    expect(matchesAnyPattern(meterAlerts, record("MODIFY", { entity: { S: "meterCounter" } }))).toBe(true);
  });

  it("drops other entities, request-log MODIFYs, REMOVEs and records without a new image", () => {
    expect(matchesAnyPattern(meterAlerts, record("INSERT", { entity: { S: "proxy" } }))).toBe(false);
    expect(matchesAnyPattern(meterAlerts, record("MODIFY", { entity: { S: "requestLog" } }))).toBe(false);
    expect(matchesAnyPattern(meterAlerts, record("REMOVE", { entity: { S: "meterCounter" } }))).toBe(false);
    expect(matchesAnyPattern(meterAlerts, record("INSERT"))).toBe(false);
    // The emulator's keys-only INSERT before an update's full image (docs/streams.md).
    expect(matchesAnyPattern(meterAlerts, record("INSERT", { pKey: { S: "p" } }))).toBe(false);
    // The value's type is part of the match: a number is not the string.
    expect(matchesAnyPattern(meterAlerts, record("INSERT", { entity: { N: "1" } }))).toBe(false);
  });

  it("supports exists, prefix and anything-but, and ORs patterns", () => {
    const event = { a: { b: "hello" }, n: 3 };
    expect(matchesAnyPattern([{ a: { b: [{ prefix: "he" }] } }], event)).toBe(true);
    expect(matchesAnyPattern([{ a: { b: [{ prefix: "x" }] } }], event)).toBe(false);
    expect(matchesAnyPattern([{ a: { c: [{ exists: false }] } }], event)).toBe(true);
    expect(matchesAnyPattern([{ a: { b: [{ exists: true }] } }], event)).toBe(true);
    expect(matchesAnyPattern([{ n: [{ "anything-but": [3] }] }], event)).toBe(false);
    expect(matchesAnyPattern([{ n: [4] }, { n: [3] }], event)).toBe(true);
    expect(matchesAnyPattern([], event)).toBe(true);
  });

  it("gives the mapping each distinct pattern once", () => {
    expect(regionStreamFilterPatterns()).toHaveLength(
      new Set(Object.values(REGION_STREAM_FILTERS).flatMap((ps) => ps.map((p) => JSON.stringify(p)))).size,
    );
  });
});
