/**
 * A proxy's filters and overrides compiled once per configuration load (docs/filters.md): the
 * stored items parsed, the IP lists made BlockLists, the removed fields split in segments, the
 * path overrides chosen per request by the longest covering prefix. Loaded on demand (its own
 * chunk of the bundle) by runtime-config.ts, only for a proxy that has such an item: most have none.
 */

import type { CompiledPolicies } from "#lib/data-plane/stages/filter.ts";
import { proxyFiltersItemOf, proxyOverridesItemOf } from "#lib/db/entities/proxy-policy.ts";
import { removeFields, selectPathOverride } from "#lib/domain/filters/apply.ts";
import { compileIpFilter } from "#lib/net/ip-filter.ts";

export function compilePolicies(
  storedFilters: Record<string, unknown> | undefined,
  storedOverrides: Record<string, unknown> | undefined,
): CompiledPolicies {
  const filters = storedFilters && proxyFiltersItemOf(storedFilters);
  const overrides = storedOverrides && proxyOverridesItemOf(storedOverrides);
  const ip = compileIpFilter(filters?.ipAllow ?? [], filters?.ipDeny ?? []);
  const paths = (filters?.removeResponseFields ?? []).map((path) => path.split("."));
  const pathOverrides = overrides?.pathOverrides ?? [];
  return {
    checkCaller: (address) => ip.check(address),
    requiredHeaders: filters?.requiredHeaders ?? [],
    stripHeaders: new Set(filters?.stripHeaders ?? []),
    ...(paths.length > 0 ? { removeFields: (value: unknown) => removeFields(value, paths) } : {}),
    pathOverride: (path) => selectPathOverride(pathOverrides, path),
  };
}
