/** Core API rate limit per plan (spec 8: basic 100, team 1,000, business custom). */
import { describe, expect, it } from "vitest";
import {
  coreApiRateLimit,
  PLAN_TIERS,
  PLATFORM_MAX_REQUESTS_PER_MINUTE,
  rateLimitForPlan,
} from "#lib/domain/plans.ts";

describe("rateLimitForPlan", () => {
  it("gives basic 100 and team 1,000 requests per minute", () => {
    expect(rateLimitForPlan({ planTier: "basic", planStatus: "active" })).toBe(100);
    expect(rateLimitForPlan({ planTier: "team", planStatus: "active" })).toBe(1_000);
  });

  it("gives every enterprise tier its configured limit, capped at the platform maximum", () => {
    for (const tier of PLAN_TIERS.filter((t) => t.startsWith("enterprise_"))) {
      expect(rateLimitForPlan({ planTier: tier, limits: { requestsPerMinute: 2_500 } })).toBe(2_500);
      expect(
        rateLimitForPlan({
          planTier: tier,
          limits: { requestsPerMinute: PLATFORM_MAX_REQUESTS_PER_MINUTE * 5 },
        }),
      ).toBe(PLATFORM_MAX_REQUESTS_PER_MINUTE);
      expect(
        rateLimitForPlan({ planTier: tier, limits: { requestsPerMinute: PLATFORM_MAX_REQUESTS_PER_MINUTE } }),
      ).toBe(PLATFORM_MAX_REQUESTS_PER_MINUTE);
    }
    expect(PLATFORM_MAX_REQUESTS_PER_MINUTE).toBeGreaterThanOrEqual(1_000);
  });

  it("falls back to the enterprise default without a usable custom limit", () => {
    expect(rateLimitForPlan({ planTier: "enterprise_custom" })).toBe(1_000);
    expect(rateLimitForPlan({ planTier: "enterprise_custom", limits: null })).toBe(1_000);
    expect(rateLimitForPlan({ planTier: "enterprise_custom", limits: { requestsPerMinute: null } })).toBe(
      1_000,
    );
    expect(rateLimitForPlan({ planTier: "enterprise_custom", limits: { requestsPerMinute: 0 } })).toBe(1_000);
    expect(rateLimitForPlan({ planTier: "enterprise_custom", limits: { requestsPerMinute: -5 } })).toBe(
      1_000,
    );
  });

  it("ignores a custom limit on non-enterprise tiers", () => {
    expect(rateLimitForPlan({ planTier: "basic", limits: { requestsPerMinute: 5_000 } })).toBe(100);
    expect(rateLimitForPlan({ planTier: "team", limits: { requestsPerMinute: 5_000 } })).toBe(1_000);
  });

  it("treats an expired plan as basic, whatever its tier or custom limit", () => {
    expect(rateLimitForPlan({ planTier: "team", planStatus: "expired" })).toBe(100);
    expect(
      rateLimitForPlan({
        planTier: "enterprise_custom",
        planStatus: "expired",
        limits: { requestsPerMinute: 5_000 },
      }),
    ).toBe(100);
  });

  it("keeps the tier's limit in the other plan statuses", () => {
    for (const planStatus of ["active", "upgrade_requested", "downgrade_scheduled", "payment_failed"]) {
      expect(rateLimitForPlan({ planTier: "team", planStatus })).toBe(1_000);
    }
  });

  it("treats an unknown or missing tier as basic", () => {
    expect(rateLimitForPlan({ planTier: "platinum" })).toBe(100);
    expect(rateLimitForPlan({ planTier: "constructor" })).toBe(100);
    expect(rateLimitForPlan({})).toBe(100);
    expect(rateLimitForPlan(undefined)).toBe(100);
  });
});

describe("coreApiRateLimit", () => {
  it("is the basic limit for a user with no client", () => {
    expect(coreApiRateLimit([])).toBe(100);
  });

  it("is the most generous limit among the user's clients", () => {
    expect(coreApiRateLimit([{ planTier: "basic" }, { planTier: "team" }, { planTier: "basic" }])).toBe(
      1_000,
    );
    expect(
      coreApiRateLimit([
        { planTier: "team" },
        { planTier: "enterprise_custom", limits: { requestsPerMinute: 4_000 } },
      ]),
    ).toBe(4_000);
    expect(coreApiRateLimit([{ planTier: "team", planStatus: "expired" }, { planTier: "basic" }])).toBe(100);
  });

  it("never goes below basic, whatever the inputs", () => {
    expect(coreApiRateLimit([{ planTier: "nonsense" }])).toBe(100);
  });
});

describe("an operator's limit override (docs/filters.md)", () => {
  it("wins over every tier and status, capped at the platform maximum", () => {
    expect(rateLimitForPlan({ planTier: "basic", limitOverrides: { requestsPerMinute: 7 } })).toBe(7);
    expect(rateLimitForPlan({ planTier: "team", limitOverrides: { requestsPerMinute: 5_000 } })).toBe(5_000);
    expect(
      rateLimitForPlan({
        planTier: "team",
        planStatus: "expired",
        limitOverrides: { requestsPerMinute: 40 },
      }),
    ).toBe(40);
    expect(
      rateLimitForPlan({
        planTier: "enterprise_custom",
        limits: { requestsPerMinute: 2_500 },
        limitOverrides: { requestsPerMinute: PLATFORM_MAX_REQUESTS_PER_MINUTE * 2 },
      }),
    ).toBe(PLATFORM_MAX_REQUESTS_PER_MINUTE);
  });

  it("is ignored when null or absent", () => {
    expect(rateLimitForPlan({ planTier: "team", limitOverrides: { requestsPerMinute: null } })).toBe(1_000);
    expect(rateLimitForPlan({ planTier: "team", limitOverrides: null })).toBe(1_000);
  });
});
