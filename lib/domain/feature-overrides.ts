/**
 * Feature and promotion overrides of a client (issue 24; docs/billing.md "Overrides"): lists of
 * known values a system administrator sets on the client's configuration (`featureOverrides`,
 * `promoOverrides`, spec 2.14) to grant something its plan does not. Every known value is declared
 * here, once, with what it changes; the API and the CLI accept no other.
 *
 * Kept off the data plane: nothing here changes a data-plane limit. The one feature override with
 * an effect raises the Core API's per-token rate limit, which the Core API's authorizer computes on
 * every request from the configurations (lib/domain/authorizer.ts): it applies at once.
 */
import { z } from "zod";
import { UpdateCommand } from "#lib/aws/document-client.ts";
import { clientConfigItemOf, clientConfigKeys, findClientConfig } from "#lib/db/entities/client-config.ts";
import { homeDb, isConditionalCheckFailure, nowIso, tableName } from "#lib/db/store.ts";
import { notFound } from "#lib/shared/errors.ts";
import { CLIENT_NOT_FOUND } from "./clients.ts";
import {
  PLAN_RATE_LIMITS,
  PLATFORM_MAX_REQUESTS_PER_MINUTE,
  type PlanSettings,
  rateLimitForPlan,
} from "./plans.ts";

/** The known feature overrides and what each changes (docs/billing.md "Overrides"). */
export const FEATURE_OVERRIDES = {
  core_api_rate_limit_x10:
    "The Core API's per-token rate limit the client grants its members is ten times its plan's (or its limit override's), at most the platform maximum; the data plane's per-credential limit is unchanged.",
} as const;

/** The known promotion overrides and what each means (docs/billing.md "Overrides"). */
export const PROMO_OVERRIDES = {
  extended_trial:
    "A promotional trial extension agreed with the client: recorded and shown on the client's configuration and Billing page for the operators and the owner; it changes no limit and no charge by itself.",
} as const;

export type FeatureOverride = keyof typeof FEATURE_OVERRIDES;
export type PromoOverride = keyof typeof PROMO_OVERRIDES;
export const FEATURE_OVERRIDE_VALUES = Object.keys(FEATURE_OVERRIDES) as [
  FeatureOverride,
  ...FeatureOverride[],
];
export const PROMO_OVERRIDE_VALUES = Object.keys(PROMO_OVERRIDES) as [PromoOverride, ...PromoOverride[]];

/** At most this many values in each list. */
export const MAX_OVERRIDES = 10;

/** Ten times the plan's Core API figure with `core_api_rate_limit_x10`. */
const RATE_LIMIT_FACTOR = 10;

const overrideList = (values: readonly string[], name: string) =>
  z
    .array(
      z.enum(values as [string, ...string[]], { error: `unknown ${name}; known: ${values.join(", ")}` }),
      {
        error: "must be a list of strings",
      },
    )
    .max(MAX_OVERRIDES, `at most ${MAX_OVERRIDES} values`)
    .refine((list) => new Set(list).size === list.length, "must not repeat a value");

export const UpdateOverridesBody = z
  .object({
    featureOverrides: overrideList(FEATURE_OVERRIDE_VALUES, "feature override"),
    promoOverrides: overrideList(PROMO_OVERRIDE_VALUES, "promo override"),
  })
  .partial()
  .strict();
export type UpdateOverridesInput = z.infer<typeof UpdateOverridesBody>;

export interface ClientOverrides {
  clientId: string;
  featureOverrides: string[];
  promoOverrides: string[];
  configUpdated: string;
}

export async function getClientOverrides(clientId: string): Promise<ClientOverrides> {
  const config = await findClientConfig(clientId);
  if (!config) throw notFound(CLIENT_NOT_FOUND);
  return {
    clientId,
    featureOverrides: [...config.featureOverrides],
    promoOverrides: [...config.promoOverrides],
    configUpdated: config.configUpdated,
  };
}

/**
 * Replace the given lists (an omitted one stays; `[]` clears it), on the client's configuration.
 * The input is already checked (UpdateOverridesBody). The Core API's next request applies it.
 */
export async function setClientOverrides(
  clientId: string,
  input: UpdateOverridesInput,
): Promise<ClientOverrides> {
  const sets = ["configUpdated = :now"];
  const values: Record<string, unknown> = { ":now": nowIso() };
  if (input.featureOverrides) {
    sets.push("featureOverrides = :features");
    values[":features"] = input.featureOverrides;
  }
  if (input.promoOverrides) {
    sets.push("promoOverrides = :promos");
    values[":promos"] = input.promoOverrides;
  }
  if (sets.length === 1) return getClientOverrides(clientId);
  try {
    const result = await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: clientConfigKeys.item(clientId),
        UpdateExpression: `SET ${sets.join(", ")}`,
        ConditionExpression: "attribute_exists(pKey)",
        ExpressionAttributeValues: values,
        ReturnValues: "ALL_NEW",
      }),
    );
    const config = clientConfigItemOf(result.Attributes ?? {});
    return {
      clientId,
      featureOverrides: [...config.featureOverrides],
      promoOverrides: [...config.promoOverrides],
      configUpdated: config.configUpdated,
    };
  } catch (error) {
    if (isConditionalCheckFailure(error)) throw notFound(CLIENT_NOT_FOUND);
    throw error;
  }
}

/** A client configuration as the Core API's authorizer reads it (a raw item). */
export type PlanWithOverrides = PlanSettings & { featureOverrides?: unknown };

const hasFeature = (config: PlanWithOverrides, feature: FeatureOverride): boolean =>
  Array.isArray(config.featureOverrides) && config.featureOverrides.includes(feature);

/** Requests per minute one client grants its members' tokens on the Core API. */
export function coreApiRequestsPerMinute(config: PlanWithOverrides): number {
  const plan = rateLimitForPlan(config);
  return hasFeature(config, "core_api_rate_limit_x10")
    ? Math.min(plan * RATE_LIMIT_FACTOR, PLATFORM_MAX_REQUESTS_PER_MINUTE)
    : plan;
}

/**
 * The Core API limit of a user token: the most generous of the user's clients (lib/domain/plans.ts
 * says why), with their feature overrides; the basic figure for a user without a client.
 */
export function coreApiRateLimitWithOverrides(configs: readonly PlanWithOverrides[]): number {
  return configs.reduce(
    (best, config) => Math.max(best, coreApiRequestsPerMinute(config)),
    PLAN_RATE_LIMITS.basic,
  );
}
