/**
 * Enforcement of the managed-client configuration (issue 12 part 2) as pure functions: which
 * regions a client may create regional resources in, what the data plane copies of a client
 * (limits, the paying MSP's suspension), and the limits' platform maximum.
 */
import { describe, expect, it } from "vitest";
import { clientConfigItemOf } from "#lib/db/entities/client-config.ts";
import { LIMIT_MAXIMUMS, plannedLimits } from "#lib/domain/msp-clients.ts";
import {
  managedRuntimeSettings,
  regionAccessProblem,
  UNMANAGED_RUNTIME,
} from "#lib/domain/msp-enforcement.ts";
import { PLATFORM_MAX_REQUESTS_PER_DAY, PLATFORM_MAX_REQUESTS_PER_MINUTE } from "#lib/domain/plans.ts";
import { errorOf } from "../support/errors.ts";

const ALLOWED = "must be one of the client's allowed regions: eu-west-1";

describe("regionAccessProblem", () => {
  it.each([
    ["no configuration", "us-east-1", undefined, undefined],
    ["not managed, with a list", "us-east-1", { mspId: null, regionAccess: ["eu-west-1"] }, undefined],
    ["managed, empty list", "us-east-1", { mspId: "m", regionAccess: [] }, undefined],
    ["managed, listed", "eu-west-1", { mspId: "m", regionAccess: ["eu-west-1"] }, undefined],
    [
      "managed, one of several",
      "us-east-1",
      { mspId: "m", regionAccess: ["eu-west-1", "us-east-1"] },
      undefined,
    ],
    ["managed, not listed", "us-east-1", { mspId: "m", regionAccess: ["eu-west-1"] }, ALLOWED],
    [
      "managed, not listed, several",
      "ap-south-1",
      { mspId: "m", regionAccess: ["eu-west-1", "us-east-1"] },
      "must be one of the client's allowed regions: eu-west-1, us-east-1",
    ],
    ["managed, case matters", "EU-WEST-1", { mspId: "m", regionAccess: ["eu-west-1"] }, ALLOWED],
  ] as const)("%s: %s -> %s", (_, region, settings, problem) => {
    expect(regionAccessProblem(region, settings)).toBe(problem);
  });
});

describe("managedRuntimeSettings", () => {
  const config = (fields: Record<string, unknown>) =>
    clientConfigItemOf({
      pKey: "CLIENT#c",
      sKey: "CONFIG",
      clientId: "c",
      configCreated: "t",
      configUpdated: "t",
      ...fields,
    });
  const limits = { requestsPerMinute: 5, requestsPerDay: 100 };
  it.each([
    ["no configuration", undefined, "suspended", UNMANAGED_RUNTIME],
    [
      "not managed, limits kept after a detach",
      config({ mspId: null, limits }),
      "suspended",
      UNMANAGED_RUNTIME,
    ],
    [
      "managed, billed to the MSP, active",
      config({ mspId: "m", billingTo: "msp", limits }),
      "active",
      { ...limits, mspSuspended: false },
    ],
    [
      "managed, billed to the MSP, suspended",
      config({ mspId: "m", billingTo: "msp" }),
      "suspended",
      { requestsPerMinute: null, requestsPerDay: null, mspSuspended: true },
    ],
    [
      "managed, billed to itself, MSP suspended",
      config({ mspId: "m", billingTo: "client", limits }),
      "suspended",
      { ...limits, mspSuspended: false },
    ],
    [
      "managed, MSP configuration missing",
      config({ mspId: "m", billingTo: "msp" }),
      undefined,
      UNMANAGED_RUNTIME,
    ],
  ] as const)("%s", (_, stored, status, expected) => {
    expect(managedRuntimeSettings(stored, status)).toEqual(expected);
  });
});

describe("plannedLimits", () => {
  const current = { requestsPerMinute: 5, requestsPerDay: 100 };
  it.each([
    ["omitted keeps", undefined, current],
    ["one changes", { requestsPerMinute: 7 }, { requestsPerMinute: 7, requestsPerDay: 100 }],
    ["null clears", { requestsPerDay: null }, { requestsPerMinute: 5, requestsPerDay: null }],
    [
      "the maximums are allowed",
      { requestsPerMinute: PLATFORM_MAX_REQUESTS_PER_MINUTE, requestsPerDay: PLATFORM_MAX_REQUESTS_PER_DAY },
      { requestsPerMinute: 10_000, requestsPerDay: 10_000_000 },
    ],
  ] as const)("%s", (_, update, expected) => {
    expect(plannedLimits(current, update)).toEqual(expected);
  });

  it.each([
    [{ requestsPerMinute: 10_001 }, ["limits.requestsPerMinute"]],
    [{ requestsPerDay: 10_000_001 }, ["limits.requestsPerDay"]],
    [{ requestsPerMinute: 1e9, requestsPerDay: 1e9 }, ["limits.requestsPerMinute", "limits.requestsPerDay"]],
  ])("above the platform maximum: 400 naming %j", (update, fields) => {
    const error = errorOf(() => plannedLimits(current, update));
    expect(error.status).toBe(400);
    expect(error.body).toMatchObject({ message: "Input failed data validation", fields });
    expect((error.body.errors as string[])[0]).toMatch(/must be at most \d+ \(the platform maximum\)/);
  });

  it("the maximums are the platform's (spec 8, lib/domain/plans.ts)", () => {
    expect(LIMIT_MAXIMUMS).toEqual({ requestsPerMinute: 10_000, requestsPerDay: 10_000_000 });
  });
});
