/** The pricing rules of a managed client's configuration (spec 4.14 rules 1 and 2), as tables. */
import { describe, expect, it } from "vitest";
import {
  applyRates,
  applyThresholds,
  raiseThresholds,
  storedRate,
  thresholdsApply,
} from "#lib/domain/msp-pricing.ts";

const RETAIL = { apiSeconds: 1, storageGB: 1, aiTokens: 1, plan: 1 };

describe("storedRate = max(clamp(submitted, 0.7, 1), MSP rate)", () => {
  it.each([
    // submitted, MSP rate, stored
    [0.8, 0.5, 0.8],
    [0.5, 0.5, 0.7], // below the floor: raised to 0.7
    [0, 0.5, 0.7],
    [-3, 0.5, 0.7],
    [1.5, 0.5, 1], // above 1: lowered to 1
    [1, 0.5, 1],
    [0.7, 0.5, 0.7],
    [0.75, 0.9, 0.9], // below the MSP's rate: raised to it
    [0.95, 0.9, 0.95],
    [2, 0.9, 1],
    [0.5, 1, 1],
  ])("submitted %s with MSP rate %s stores %s", (submitted, msp, stored) => {
    expect(storedRate(submitted, msp)).toBe(stored);
  });
});

describe("applyRates", () => {
  const current = { apiSeconds: 0.9, storageGB: 0.85, aiTokens: 1, plan: 0.8 };
  const msp = { apiSeconds: 0.75, storageGB: 0.6, aiTokens: 0.95, plan: 0.5 };

  it.each([
    ["nothing submitted: every metric keeps its value", undefined, current],
    ["an empty object: the same", {}, current],
    ["one metric: only it changes", { apiSeconds: 0.8 }, { ...current, apiSeconds: 0.8 }],
    [
      "clamped and floored per metric",
      { apiSeconds: 0.1, aiTokens: 0.8, plan: 3 },
      { ...current, apiSeconds: 0.75, aiTokens: 0.95, plan: 1 },
    ],
    [
      "all four",
      { apiSeconds: 0.7, storageGB: 0.7, aiTokens: 0.7, plan: 0.7 },
      { apiSeconds: 0.75, storageGB: 0.7, aiTokens: 0.95, plan: 0.7 },
    ],
  ] as const)("%s", (_label, submitted, expected) => {
    expect(applyRates(current, submitted, msp)).toEqual(expected);
  });

  it("never changes the stored object", () => {
    const before = { ...current };
    applyRates(current, { apiSeconds: 1 }, RETAIL);
    expect(current).toEqual(before);
  });
});

describe("thresholds", () => {
  it.each([
    ["msp", "stripe", true],
    ["client", "stripe", false],
    ["msp", "invoice", false],
    ["msp", "marketplace", false],
    ["client", "invoice", false],
  ])("billingTo %s with billingType %s applies: %s", (billingTo, billingType, applies) => {
    expect(thresholdsApply(billingTo, billingType)).toBe(applies);
  });

  it.each([
    // minimum, maximum -> stored minimum, maximum
    [5, 20, 5, 20],
    [0, 0, 5, 20], // minimum raised to 5, maximum to 20
    [1, 100, 5, 100],
    [12, 15, 12, 22], // at least 10 above the minimum
    [15, 20, 15, 25],
    [10, 20, 10, 20],
    [50, 40, 50, 60],
    [-5, 5, 5, 20],
  ])("min %s max %s are stored as %s / %s", (min, max, storedMin, storedMax) => {
    expect(raiseThresholds({ minimumTopUpThreshold: min, maximumTopUpThreshold: max })).toEqual({
      minimumTopUpThreshold: storedMin,
      maximumTopUpThreshold: storedMax,
    });
  });

  const current = { minimumTopUpThreshold: 8, maximumTopUpThreshold: 30 };
  const billedToMsp = { billingTo: "msp", billingType: "stripe" };

  it.each([
    [
      "applies: only the minimum submitted",
      { minimumTopUpThreshold: 25 },
      billedToMsp,
      { minimumTopUpThreshold: 25, maximumTopUpThreshold: 35 },
    ],
    [
      "applies: only the maximum submitted",
      { maximumTopUpThreshold: 10 },
      billedToMsp,
      { minimumTopUpThreshold: 8, maximumTopUpThreshold: 20 },
    ],
    ["applies: nothing submitted keeps the stored ones", undefined, billedToMsp, current],
    [
      "billed to the client: unchanged",
      { minimumTopUpThreshold: 1, maximumTopUpThreshold: 2 },
      { billingTo: "client", billingType: "stripe" },
      current,
    ],
    [
      "not stripe: unchanged",
      { minimumTopUpThreshold: 1 },
      { billingTo: "msp", billingType: "invoice" },
      current,
    ],
  ] as const)("%s", (_label, submitted, context, expected) => {
    expect(applyThresholds(current, submitted, context)).toEqual(expected);
  });
});
