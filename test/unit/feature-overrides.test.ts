/** The known overrides and the Core API limit they change (lib/domain/feature-overrides.ts, docs/billing.md "Overrides"). */
import { describe, expect, it } from "vitest";
import {
  coreApiRateLimitWithOverrides,
  coreApiRequestsPerMinute,
  FEATURE_OVERRIDE_VALUES,
  PROMO_OVERRIDE_VALUES,
  UpdateOverridesBody,
} from "#lib/domain/feature-overrides.ts";

const X10 = ["core_api_rate_limit_x10"];

describe("core_api_rate_limit_x10", () => {
  it("multiplies the figure that applies by ten, at most the platform maximum", () => {
    expect(coreApiRequestsPerMinute({ planTier: "basic" })).toBe(100);
    expect(coreApiRequestsPerMinute({ planTier: "basic", featureOverrides: X10 })).toBe(1_000);
    expect(coreApiRequestsPerMinute({ planTier: "team", featureOverrides: X10 })).toBe(10_000);
    // An operator's limit override is the figure that applies: ten times it, capped.
    expect(
      coreApiRequestsPerMinute({
        planTier: "basic",
        limitOverrides: { requestsPerMinute: 30 },
        featureOverrides: X10,
      }),
    ).toBe(300);
    expect(
      coreApiRequestsPerMinute({
        planTier: "enterprise_custom",
        limits: { requestsPerMinute: 5_000 },
        featureOverrides: X10,
      }),
    ).toBe(10_000);
    // An expired plan's figure is basic's.
    expect(coreApiRequestsPerMinute({ planTier: "team", planStatus: "expired", featureOverrides: X10 })).toBe(
      1_000,
    );
  });

  it("is read from the stored list only: other values, or a malformed list, change nothing", () => {
    expect(coreApiRequestsPerMinute({ planTier: "basic", featureOverrides: ["something_else"] })).toBe(100);
    expect(coreApiRequestsPerMinute({ planTier: "basic", featureOverrides: "core_api_rate_limit_x10" })).toBe(
      100,
    );
    expect(coreApiRequestsPerMinute({ planTier: "basic", featureOverrides: null })).toBe(100);
  });

  it("a token gets the most generous of its user's clients; no client is basic's figure", () => {
    expect(coreApiRateLimitWithOverrides([])).toBe(100);
    expect(
      coreApiRateLimitWithOverrides([{ planTier: "team" }, { planTier: "basic", featureOverrides: X10 }]),
    ).toBe(1_000);
    expect(
      coreApiRateLimitWithOverrides([{ planTier: "basic" }, { planTier: "team", featureOverrides: X10 }]),
    ).toBe(10_000);
  });
});

describe("the body", () => {
  it("takes only declared values, none repeated, at most ten", () => {
    expect(FEATURE_OVERRIDE_VALUES).toContain("core_api_rate_limit_x10");
    expect(PROMO_OVERRIDE_VALUES).toContain("extended_trial");
    expect(UpdateOverridesBody.safeParse({ featureOverrides: X10, promoOverrides: [] }).success).toBe(true);
    expect(UpdateOverridesBody.safeParse({}).success).toBe(true);
    for (const body of [
      { featureOverrides: ["extended_trial"] },
      { promoOverrides: X10 },
      { featureOverrides: [...X10, ...X10] },
      { featureOverrides: Array.from({ length: 11 }, () => X10[0]) },
      { featureOverrides: X10[0] },
      { other: [] },
    ])
      expect(UpdateOverridesBody.safeParse(body).success, JSON.stringify(body)).toBe(false);
  });
});
