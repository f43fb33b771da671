/**
 * A proxy's filters and overrides (docs/filters.md) as stored: one item of each per proxy, beside
 * the proxy in its region's client partition (`POLICY#<proxyId>#FILTERS`, `POLICY#<proxyId>#OVERRIDES`).
 * The data plane reads both in the BatchGetItem that already reads the proxy's credentials and
 * target (lib/data-plane/runtime-config.ts): no extra round trip. The proxy cascade deletes them
 * (lib/domain/cascade.ts, prefix `POLICY#<proxyId>#`).
 *
 * zod/mini: the data plane's cold start reads this module.
 */
import * as z from "zod/mini";
import { keys } from "#lib/db/keys.ts";
import { getInRegion } from "#lib/db/regional.ts";
import { parseStored, type TransactionStep, tableName } from "#lib/db/store.ts";

export const ProxyFiltersItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("proxyFilters"),
  clientId: z.string(),
  proxyId: z.string(),
  /** CIDR ranges (or single addresses); when not empty, only callers inside one pass. */
  ipAllow: z.array(z.string()),
  /** CIDR ranges (or single addresses) refused; deny wins over allow. */
  ipDeny: z.array(z.string()),
  /** Lowercase header names every request must carry. */
  requiredHeaders: z.array(z.string()),
  /** Lowercase header names removed from the caller's request before it is forwarded. */
  stripHeaders: z.array(z.string()),
  /** Dot paths removed from JSON response bodies. */
  removeResponseFields: z.array(z.string()),
  updatedAt: z.string(),
  updatedBy: z.string(),
  /** Bumped by every write: a write is conditioned on the version it merged into. */
  policyVersion: z.int(),
});
export type ProxyFiltersItem = z.infer<typeof ProxyFiltersItem>;

export const PathOverride = z.object({
  pathPrefix: z.string(),
  timeoutSeconds: z.optional(z.int()),
  additionalHeaders: z.optional(z.record(z.string(), z.string())),
});
export type PathOverride = z.infer<typeof PathOverride>;

export const ProxyOverridesItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("proxyOverrides"),
  clientId: z.string(),
  proxyId: z.string(),
  pathOverrides: z.array(PathOverride),
  updatedAt: z.string(),
  updatedBy: z.string(),
  policyVersion: z.int(),
});
export type ProxyOverridesItem = z.infer<typeof ProxyOverridesItem>;

export const proxyFiltersItemOf = (item: Record<string, unknown>): ProxyFiltersItem =>
  parseStored(ProxyFiltersItem, "proxy filters", item);
export const proxyOverridesItemOf = (item: Record<string, unknown>): ProxyOverridesItem =>
  parseStored(ProxyOverridesItem, "proxy overrides", item);

export const proxyPolicyKeys = { filters: keys.proxyFilters, overrides: keys.proxyOverrides } as const;

/** Access pattern "a proxy's filters": GetItem in the proxy's region; undefined when none are set. */
export async function findProxyFilters(
  region: string,
  clientId: string,
  proxyId: string,
): Promise<ProxyFiltersItem | undefined> {
  const item = await getInRegion(region, proxyPolicyKeys.filters(clientId, proxyId));
  return item ? proxyFiltersItemOf(item) : undefined;
}

/** Access pattern "a proxy's overrides": GetItem in the proxy's region; undefined when none are set. */
export async function findProxyOverrides(
  region: string,
  clientId: string,
  proxyId: string,
): Promise<ProxyOverridesItem | undefined> {
  const item = await getInRegion(region, proxyPolicyKeys.overrides(clientId, proxyId));
  return item ? proxyOverridesItemOf(item) : undefined;
}

// ---- the steps of the policy transactions (lib/domain/proxy-policies.ts composes them)

export const POLICY_STEPS = { put: "write policy", delete: "delete policy" } as const;

/** Write the item if it is still at `seenVersion` (0: there was none). */
export const putPolicyStep = (
  item: ProxyFiltersItem | ProxyOverridesItem,
  seenVersion: number,
): TransactionStep => ({
  name: POLICY_STEPS.put,
  action: {
    Put: {
      TableName: tableName(),
      Item: item,
      ...(seenVersion === 0
        ? { ConditionExpression: "attribute_not_exists(pKey)" }
        : {
            ConditionExpression: "policyVersion = :seen",
            ExpressionAttributeValues: { ":seen": seenVersion },
          }),
    },
  },
});

export const deletePolicyStep = (key: { pKey: string; sKey: string }): TransactionStep => ({
  name: POLICY_STEPS.delete,
  action: { Delete: { TableName: tableName(), Key: key } },
});
