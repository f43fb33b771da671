/**
 * Plan tiers (spec 2.14) and the Core API rate limit they grant (section 8).
 *
 * A user token belongs to a user, not to a client, but a user can belong to several clients on
 * different plans. The token gets the MOST GENEROUS limit among the clients the user is a member
 * of (a user with no client gets the basic limit): a user's own cheaper organisation must not
 * throttle the work they do for a bigger one, and the limit exists to protect the service from a
 * runaway token, not to meter a client's usage (meters do that on the data plane).
 */
export const PLAN_TIERS = [
  "basic",
  "team",
  "enterprise_basic",
  "enterprise_security",
  "enterprise_governance",
  "enterprise_custom",
] as const;
export type PlanTier = (typeof PLAN_TIERS)[number];

export const PLAN_STATUSES = [
  "active",
  "upgrade_requested",
  "downgrade_scheduled",
  "payment_failed",
  "expired",
] as const;

export type PlanStatus = (typeof PLAN_STATUSES)[number];

/** A stored tier as the API names it: an unknown or missing one is `basic` (what it is charged as). */
export const planTierOf = (value: string | undefined): PlanTier =>
  (PLAN_TIERS as readonly string[]).includes(value ?? "") ? (value as PlanTier) : "basic";

/** A stored plan status as the API names it: an unknown or missing one is `active`. */
export const planStatusOf = (value: string | undefined): PlanStatus =>
  (PLAN_STATUSES as readonly string[]).includes(value ?? "") ? (value as PlanStatus) : "active";

/** Requests per minute per token on the Core API (and per proxy credential on the data plane). */
export const PLAN_RATE_LIMITS: Record<PlanTier, number> = {
  basic: 100,
  team: 1_000,
  // "Business custom": enterprise tiers default to the team figure unless the client's
  // configuration sets limits.requestsPerMinute.
  enterprise_basic: 1_000,
  enterprise_security: 1_000,
  enterprise_governance: 1_000,
  enterprise_custom: 1_000,
};

/** Platform maximum of a configured per-minute limit (spec 8: capped at a platform maximum). */
export const PLATFORM_MAX_REQUESTS_PER_MINUTE = 10_000;
export const PLATFORM_MAX_REQUESTS_PER_DAY = 10_000_000;

export interface PlanSettings {
  planTier?: string;
  planStatus?: string;
  limits?: { requestsPerMinute?: number | null } | null;
  /** Set by a system administrator (docs/filters.md "Plan limit overrides"): wins over the plan. */
  limitOverrides?: { requestsPerMinute?: number | null } | null;
}

/**
 * Requests per minute a client's plan grants (per user token on the Core API, per proxy credential
 * on the data plane). An operator's override (`limitOverrides.requestsPerMinute`) wins over the
 * plan, whatever the tier or status, capped at the platform maximum.
 */
export function rateLimitForPlan(settings: PlanSettings | undefined): number {
  const override = settings?.limitOverrides?.requestsPerMinute;
  if (typeof override === "number" && override > 0)
    return Math.min(override, PLATFORM_MAX_REQUESTS_PER_MINUTE);
  const tier = planTierOf(settings?.planTier);
  // An expired plan falls back to basic.
  const effectiveTier = settings?.planStatus === "expired" ? "basic" : tier;
  const custom = settings?.limits?.requestsPerMinute;
  if (effectiveTier.startsWith("enterprise_") && typeof custom === "number" && custom > 0) {
    return Math.min(custom, PLATFORM_MAX_REQUESTS_PER_MINUTE);
  }
  return PLAN_RATE_LIMITS[effectiveTier];
}

export function coreApiRateLimit(clientPlans: readonly PlanSettings[]): number {
  return clientPlans.reduce((best, plan) => Math.max(best, rateLimitForPlan(plan)), PLAN_RATE_LIMITS.basic);
}
