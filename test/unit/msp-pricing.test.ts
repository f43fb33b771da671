/** The pricing rules of a managed client's configuration (spec 4.14 rules 1 and 2), as tables. */
import { describe, expect, it } from "vitest";
import {
  apiSecondsAmountNanos,
  applyRates,
  applyThresholds,
  automaticTopUpCents,
  automaticTopUpDue,
  manualTopUpProblem,
  nanosToAmount,
  nanosToDecimal,
  priceUsage,
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

describe("apiSecondsAmountNanos = ms × 100 nano-USD × rate, rounded half up once", () => {
  it.each([
    // ms, rate, nano-dollars
    [0, 1, 0n],
    [1000, 1, 100_000n], // one API second at retail: $0.0001
    [1000, 0.75, 75_000n],
    [1, 1, 100n],
    [1, 0.7, 70n],
    [3, 0.333333, 100n], // 99.9999 rounds up
    [1, 0.000004, 0n], // 0.0004 rounds down
    [1, 0.000005, 0n], // 0.0005: below half a nano
    [5, 0.000001, 0n], // 0.0005
    [10, 0.000001, 0n], // 0.001
    [50, 0.00001, 0n], // 0.05
    [5_000, 0.000001, 1n], // 0.5: half rounds up
    [3_600_000, 1, 360_000_000n], // an hour of request time: $0.36
    [3_600_000, 0.9, 324_000_000n],
    [1234, 0.9, 111_060n], // 1234 × 0.9 is 1110.6000000000001 in binary floating point; exact here
    [86_400_000 * 31, 1, 267_840_000_000n], // a month of continuous request time: $267.84
  ])("%s ms at rate %s is %s nano-USD", (ms, rate, nanos) => {
    expect(apiSecondsAmountNanos(ms, rate)).toBe(nanos);
  });

  it("is additive across parts up to one rounding per part", () => {
    const parts = [317, 1021, 4, 999, 12_345];
    const whole = apiSecondsAmountNanos(
      parts.reduce((a, b) => a + b, 0),
      0.85,
    );
    const summed = parts.map((ms) => apiSecondsAmountNanos(ms, 0.85)).reduce((a, b) => a + b, 0n);
    expect(whole).toBe(summed); // 85 nano per ms: integer, so no rounding at all
    expect(apiSecondsAmountNanos(3, 0.333333) * 2n - apiSecondsAmountNanos(6, 0.333333)).toBeLessThanOrEqual(
      1n,
    );
  });

  it.each([
    [-1, 1],
    [Number.NaN, 1],
    [1, -0.1],
    [1, Number.POSITIVE_INFINITY],
  ])("refuses %s ms at rate %s", (ms, rate) => {
    expect(() => apiSecondsAmountNanos(ms, rate)).toThrow(RangeError);
  });
});

describe("amounts as numbers and as 9-place decimals", () => {
  it.each([
    [0n, 0, "0.000000000"],
    [1n, 0.000000001, "0.000000001"],
    [111_060n, 0.00011106, "0.000111060"],
    [360_000_000n, 0.36, "0.360000000"],
    [20_000_000_000n, 20, "20.000000000"],
    [-1_500_000_000n, -1.5, "-1.500000000"],
    [999_999_999_999_999n, 999_999.999999999, "999999.999999999"],
  ])("%s nano-USD is %s, %s", (nanos, amount, decimal) => {
    expect(nanosToAmount(nanos)).toBe(amount);
    expect(String(nanosToAmount(nanos))).toBe(String(amount)); // the text DynamoDB is sent
    expect(nanosToDecimal(nanos)).toBe(decimal);
  });

  it("priceUsage prices one month at both rates", () => {
    expect(priceUsage({ apiMilliseconds: 1234, clientRate: 0.9, mspRate: 0.75 })).toEqual({
      apiSeconds: 1.234,
      amountAtClientRatesNanos: 111_060n,
      amountAtMspRatesNanos: 92_550n,
    });
  });
});

describe("automatic top-ups", () => {
  const due = {
    billingTo: "msp",
    billingType: "stripe",
    topUpMethod: "automatic",
    budget: { current: 4.99, minimumTopUpThreshold: 5, maximumTopUpThreshold: 20 },
    automaticTopUpFailedAt: null as string | null,
  };
  const now = Date.parse("2026-11-23T12:00:00Z");

  it.each([
    ["below the minimum", {}, true],
    ["at the minimum", { budget: { ...due.budget, current: 5 } }, false],
    ["negative balance", { budget: { ...due.budget, current: -3.2 } }, true],
    ["manual", { topUpMethod: "manual" }, false],
    ["billed to the client", { billingTo: "client" }, false],
    ["not by Stripe", { billingType: "invoice" }, false],
    ["refused 59 minutes ago", { automaticTopUpFailedAt: "2026-11-23T11:01:00Z" }, false],
    ["refused 61 minutes ago", { automaticTopUpFailedAt: "2026-11-23T10:59:00Z" }, true],
  ])("%s: due %s", (_, change, expected) => {
    expect(automaticTopUpDue({ ...due, ...change }, now)).toBe(expected);
  });

  it.each([
    // current, maximum, cents
    [4.99, 20, 1501],
    [0, 20, 2000],
    [-3.2, 20, 2320],
    [0.1, 15.2, 1510], // 15.2 - 0.1 is 15.099999999999998 in floating point
    [19.999999999, 20, 1], // a fraction of a cent is a whole cent
    [20, 20, 0],
    [25, 20, 0],
  ])("current %s, maximum %s: charge %s cents", (current, maximum, cents) => {
    expect(automaticTopUpCents({ current, minimumTopUpThreshold: 5, maximumTopUpThreshold: maximum })).toBe(
      cents,
    );
  });
});

describe("manual top-ups", () => {
  const budget = { current: 7.5, minimumTopUpThreshold: 5, maximumTopUpThreshold: 20 };
  it.each([
    [10, undefined],
    [12.5, undefined], // exactly up to the maximum
    [0.5, undefined],
    [0.57, undefined], // 0.57 × 100 is 56.99999999999999 in floating point: still whole cents
    [12.51, "must not raise"],
    [0.49, "must be at least 0.50"],
    [1.005, "whole cents"],
    [Number.NaN, "whole cents"],
  ])("amount %s: %s", (amount, problem) => {
    const found = manualTopUpProblem(amount, budget);
    if (problem === undefined) expect(found).toBeUndefined();
    else expect(found).toContain(problem);
  });
});
