/**
 * Operator-set per-client overrides of the plan limits (docs/filters.md "Plan limit overrides";
 * spec 8): a system administrator sets the requests per minute a client gets, in place of its
 * plan's figure, per proxy credential on the data plane and per user token on the Core API.
 *
 * Stored on the client's configuration record in the home region (`limitOverrides`) and copied,
 * like the plan, onto the client's runtime item in every region (`rateLimitOverride`,
 * lib/data-plane/client-runtime.ts), which bumps `configVersion`: the next proxied request is
 * counted against the new figure.
 */
import { z } from "zod";
import { GetCommand, UpdateCommand } from "#lib/aws/document-client.ts";
import { clientKeys } from "#lib/db/entities/client.ts";
import { syncClientRuntime } from "#lib/db/entities/client-runtime.ts";
import { homeDb, isConditionalCheckFailure, nowIso, tableName } from "#lib/db/store.ts";
import { notFound } from "#lib/shared/errors.ts";
import { CLIENT_NOT_FOUND } from "./clients.ts";
import { PLATFORM_MAX_REQUESTS_PER_MINUTE, type PlanTier, planTierOf, rateLimitForPlan } from "./plans.ts";

export const UpdateLimitOverridesBody = z
  .object({
    requestsPerMinute: z
      .number({ error: "must be a number" })
      .int("must be a whole number")
      .min(1, "at least 1")
      .max(
        PLATFORM_MAX_REQUESTS_PER_MINUTE,
        `at most ${PLATFORM_MAX_REQUESTS_PER_MINUTE} (the platform maximum)`,
      )
      .nullable(),
  })
  .partial()
  .strict();
export type UpdateLimitOverridesInput = z.infer<typeof UpdateLimitOverridesBody>;

/** The fields of the client's configuration record this reads (the record has no entity module yet). */
const StoredPlan = z.object({
  planTier: z.string().optional(),
  planStatus: z.string().optional(),
  limits: z.object({ requestsPerMinute: z.number().nullable().optional() }).nullable().optional(),
  limitOverrides: z
    .object({ requestsPerMinute: z.number().nullable().optional(), updatedAt: z.string().optional() })
    .nullable()
    .optional(),
});
type StoredPlan = z.infer<typeof StoredPlan>;

export interface ApiLimitOverrides {
  clientId: string;
  /** The override; null: none, the plan's figure applies. */
  requestsPerMinute: number | null;
  planTier: PlanTier;
  /** What the plan alone grants. */
  planRequestsPerMinute: number;
  /** What applies: the override when set, else the plan's figure. */
  effectiveRequestsPerMinute: number;
  updatedAt: string | null;
}

function toApi(clientId: string, stored: StoredPlan): ApiLimitOverrides {
  const override = stored.limitOverrides?.requestsPerMinute ?? null;
  const plan = { planTier: stored.planTier, planStatus: stored.planStatus, limits: stored.limits };
  return {
    clientId,
    requestsPerMinute: override,
    planTier: planTierOf(stored.planTier),
    planRequestsPerMinute: rateLimitForPlan(plan),
    effectiveRequestsPerMinute: rateLimitForPlan({ ...plan, limitOverrides: stored.limitOverrides }),
    updatedAt: stored.limitOverrides?.updatedAt ?? null,
  };
}

export async function getLimitOverrides(clientId: string): Promise<ApiLimitOverrides> {
  const result = await homeDb().send(
    new GetCommand({ TableName: tableName(), Key: clientKeys.config(clientId), ConsistentRead: true }),
  );
  if (!result.Item) throw notFound(CLIENT_NOT_FOUND);
  return toApi(clientId, StoredPlan.parse(result.Item));
}

/** Set (or, with null, remove) the override; every region's data plane takes it on its next request. */
export async function setLimitOverrides(
  clientId: string,
  input: UpdateLimitOverridesInput,
): Promise<ApiLimitOverrides> {
  if (input.requestsPerMinute === undefined) return getLimitOverrides(clientId);
  const now = nowIso();
  let stored: StoredPlan;
  try {
    const result = await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: clientKeys.config(clientId),
        UpdateExpression: "SET limitOverrides = :overrides, configUpdated = :now",
        ConditionExpression: "attribute_exists(pKey)",
        ExpressionAttributeValues: {
          ":overrides": { requestsPerMinute: input.requestsPerMinute, updatedAt: now },
          ":now": now,
        },
        ReturnValues: "ALL_NEW",
      }),
    );
    stored = StoredPlan.parse(result.Attributes ?? {});
  } catch (error) {
    if (isConditionalCheckFailure(error)) throw notFound(CLIENT_NOT_FOUND);
    throw error;
  }
  await syncClientRuntime(clientId, { rateLimitOverride: input.requestsPerMinute });
  return toApi(clientId, stored);
}
