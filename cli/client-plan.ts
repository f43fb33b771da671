/**
 * Operators move a client to another plan tier (for example to `team`) by setting `planTier` on its
 * configuration record (spec 2.14). The rate limit of the client's members follows on their next
 * authorizer evaluation (lib/domain/plans.ts).
 */

import { UpdateCommand } from "#lib/aws/document-client.ts";
import { syncClientRuntime } from "#lib/db/entities/client-runtime.ts";
import { keys } from "#lib/db/keys.ts";
import { homeDb, isConditionalCheckFailure, nowIso, tableName } from "#lib/db/store.ts";
import { CLIENT_NOT_FOUND } from "#lib/domain/clients.ts";
import type { PLAN_STATUSES, PlanTier } from "#lib/domain/plans.ts";
import { notFound } from "#lib/http/errors.ts";

export type PlanStatus = (typeof PLAN_STATUSES)[number];

export async function setClientPlan(clientId: string, planTier: PlanTier, planStatus?: PlanStatus) {
  const sets = ["planTier = :tier", "configUpdated = :now"];
  const values: Record<string, unknown> = { ":tier": planTier, ":now": nowIso() };
  if (planStatus) {
    sets.push("planStatus = :status");
    values[":status"] = planStatus;
  }
  try {
    const result = await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.clientConfig(clientId),
        UpdateExpression: `SET ${sets.join(", ")}`,
        ConditionExpression: "attribute_exists(pKey)",
        ExpressionAttributeValues: values,
        ReturnValues: "ALL_NEW",
      }),
    );
    const config = result.Attributes ?? {};
    await syncClientRuntime(clientId, {
      planTier: String(config.planTier),
      planStatus: config.planStatus ? String(config.planStatus) : undefined,
    });
    return {
      clientId,
      planTier: config.planTier,
      planStatus: config.planStatus,
      configUpdated: config.configUpdated,
    };
  } catch (error) {
    if (isConditionalCheckFailure(error)) throw notFound(CLIENT_NOT_FOUND);
    throw error;
  }
}

export const BILLING_STATUSES = ["active", "suspended"] as const;

/** Operators (or the billing integration) suspend or reactivate a client's billing; the data plane answers 402 while suspended. */
export async function setClientBillingStatus(
  clientId: string,
  billingStatus: (typeof BILLING_STATUSES)[number],
) {
  try {
    await homeDb().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.clientConfig(clientId),
        UpdateExpression: "SET billingStatus = :status, configUpdated = :now",
        ConditionExpression: "attribute_exists(pKey)",
        ExpressionAttributeValues: { ":status": billingStatus, ":now": nowIso() },
      }),
    );
  } catch (error) {
    if (isConditionalCheckFailure(error)) throw notFound(CLIENT_NOT_FOUND);
    throw error;
  }
  await syncClientRuntime(clientId, { billingStatus });
  return { clientId, billingStatus };
}
