/**
 * Clients (spec 4.1), their plan limit overrides (docs/filters.md), their feature and promo
 * overrides and their owner's billing (docs/billing.md): dispatch derived from the operation
 * registry (lib/api/operations/clients.ts, lib/api/operations/filters.ts,
 * lib/api/operations/feature-overrides.ts, lib/api/operations/billing.ts).
 */
import { createOperationHandler } from "#lib/api/dispatch.ts";
import { clientBillingOperations } from "#lib/api/operations/billing.ts";
import { clientOperations } from "#lib/api/operations/clients.ts";
import { featureOverrideOperations } from "#lib/api/operations/feature-overrides.ts";
import { limitOverrideOperations } from "#lib/api/operations/filters.ts";

export const operations = [
  ...clientOperations,
  ...limitOverrideOperations,
  ...featureOverrideOperations,
  ...clientBillingOperations,
];
export const handler = createOperationHandler(operations);
